"""Request bodies capped per route before anything reads them: a body larger than its route needs
is refused (413) by its Content-Length before a byte of it is read, or, sent without one (chunked),
as soon as the bytes received pass the cap, so that neither an anonymous client nor a viewer makes
the console spool megabytes to disk or memory before sign-in, role and CSRF are checked. A route
that reads no body (every GET) takes none; a write takes a form's or a JSON document's worth
(BODY_LIMIT), a few take more (LARGER_BODIES: the settings and target texts, the CSV import)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import orjson
from starlette.exceptions import HTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_BODY_METHODS = ("GET", "HEAD", "OPTIONS")
BODY_LIMIT = 16 * 1024  # a sign-in, a watch-list entry, a CSRF token: a few hundred bytes
SETTINGS_BODY_LIMIT = 1024 * 1024  # 256 KiB of JSON text, URL-encoded (up to 3 bytes a character)
IMPORT_BODY_LIMIT = 2 * 1024 * 1024 + 64 * 1024  # a 2 MiB CSV and its multipart envelope
LARGER_BODIES = {
    ("POST", "/watchlist/import"): IMPORT_BODY_LIMIT,
    ("POST", "/api/watchlist/import"): IMPORT_BODY_LIMIT,
    ("POST", "/cameras/{camera_id}"): SETTINGS_BODY_LIMIT,
    ("PUT", "/api/cameras/{camera_id}"): SETTINGS_BODY_LIMIT,
    ("POST", "/notifications/targets"): SETTINGS_BODY_LIMIT,
    ("PUT", "/api/notify/targets/{name}"): SETTINGS_BODY_LIMIT,
}


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a body passes its cap: FastAPI re-raises an HTTPException met
    while it reads a body, so the console's error handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit))


def too_large(limit: int) -> str:
    return f"the request body is larger than this route takes ({limit} bytes)"


def route_limits(larger: Mapping[tuple[str, str], int] = LARGER_BODIES) -> Callable[[Scope], int]:
    """The cap of a request's body: 0 for a method that carries none, else that of its route in
    `larger` (method, path template), else BODY_LIMIT (unknown paths too)."""
    patterns = [(method, compile_path(path)[0], limit) for (method, path), limit in larger.items()]

    def limit_of(scope: Scope) -> int:
        method, path = scope.get("method", "GET"), scope.get("path", "")
        if method in NO_BODY_METHODS:
            return 0
        for route_method, pattern, limit in patterns:
            if route_method == method and pattern.match(path):
                return limit
        return BODY_LIMIT

    return limit_of


class BodyLimitMiddleware:
    """In front of the session, the sign-in and every route: counts each request's body as it
    arrives and refuses it past `limit_of(scope)` (413, `connection: close`, the rest unread)."""

    def __init__(self, app: ASGIApp, limit_of: Callable[[Scope], int]) -> None:
        self.app, self.limit_of = app, limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_of(scope)
        length = _content_length(scope)
        if length is None or length > limit:
            await _refuse(send, 400 if length is None else 413, limit)
            return
        received, over, started = 0, False, False

        async def counting() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    raise BodyTooLarge(limit)
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if over:  # the rest of the body is never read: the connection cannot be reused
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counting, sending)
        except BodyTooLarge:
            if started:
                raise
            await _refuse(send, 413, limit)


def _content_length(scope: Scope) -> int | None:
    """The declared length (0 when none is declared, the body then counted as it comes); None
    for a value that is not a length."""
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return 0


async def _refuse(send: Send, status: int, limit: int) -> None:
    detail = too_large(limit) if status == 413 else "the Content-Length header is not a length"
    body = orjson.dumps({"detail": detail})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
