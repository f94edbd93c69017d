"""Who is asking: a session (the pages; a signed cookie with a random id, looked up in the
database: sessions.py) or a bearer token (the API), checked by one ASGI middleware in front of
every route except the few public ones, so that a route added later is closed by default. Writes
need the admin role and, from a cookie session, the session's CSRF token (a form field
`csrf_token` or the `X-CSRF-Token` header, an HMAC of the session's id); a bearer-token request
carries no cookie, so a forged cross-site request cannot use it. A write (any method but GET,
HEAD, OPTIONS, on any path but VIEWER_WRITES) that is refused whatever its body holds, a viewer's,
or a cookie session's whose CSRF header is wrong (or missing, the body not a form that could carry
the token), reaches its route with its body withheld, unread (FastAPI reads a route's body before
its dependencies run), and `writer` refuses it.

The local viewer token (`up`'s `<data dir>/console.token`, store setting viewer_token_file), sent
as a bearer token and compared in constant time, signs in LOCAL_VIEWER: a viewer that may only GET
(or HEAD) the API; any other request with it is refused (403) before its route runs.
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import quote

import orjson
from fastapi import HTTPException, Request
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stream_worker.store.web.sessions import SessionBook
from stream_worker.store.web.users import User, Users

log = logging.getLogger("stream_worker.store.web")
PUBLIC_PATHS = ("/login", "/healthz")
PUBLIC_PREFIXES = ("/static/",)
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
VIEWER_WRITES = ("/logout",)
LOCAL_VIEWER = User("local-viewer", "viewer", password_hash="")
LOCAL_VIEWER_READS = ("GET", "HEAD")


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def sessions_of(request: Request) -> SessionBook:
    return request.state.sessions  # type: ignore[no-any-return]


def csrf_token(request: Request) -> str:
    """The session's CSRF token (a visitor's session id made on first use)."""
    return sessions_of(request).csrf(request.session)


def wants_html(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    if path.startswith("/api/"):
        return False
    accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1")
    return "text/html" in accept or scope.get("method") == "GET"


class AuthMiddleware:
    """Puts the signed-in user on `request.state.user`, or answers 401 (API) / a redirect to the
    sign-in page (pages). Runs inside SessionMiddleware, so the cookie is decoded already; its
    session is looked up in the database on a worker thread."""

    def __init__(
        self, app: ASGIApp, users: Users, sessions: SessionBook, viewer_token: str | None = None
    ) -> None:
        self.app, self.users, self.sessions = app, users, sessions
        self._viewer_token = viewer_token.encode() if viewer_token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            user, via_token = await self._user(scope)
        except SQLAlchemyError as error:  # sessions are in the database: without it, nobody is known
            log.warning("console: sessions cannot be read", extra={"error": type(error).__name__})
            await _json(send, 503, "the store's database is not answering; try again shortly")
            return
        scope.setdefault("state", {})
        scope["state"]["user"] = user
        scope["state"]["via_token"] = via_token
        scope["state"]["sessions"] = self.sessions
        if user is None and not is_public(scope["path"]):
            await self._refuse(scope, send)
            return
        if user is LOCAL_VIEWER and not _local_read(scope):
            await _json(send, 403, "the local viewer token reads the API only (GET /api/...)")
            return
        if (
            user is not None
            and _is_write(scope)
            and (not user.is_admin or self._csrf_fails(scope, via_token))
        ):
            receive, send = _body_withheld(receive, send)  # `writer` answers 403, rendered as usual
        await self.app(scope, receive, send)

    def _csrf_fails(self, scope: Scope, via_token: bool) -> bool:
        """A cookie session's write whose CSRF check fails without its body: a wrong X-CSRF-Token,
        or none and a body that is no form (where a `csrf_token` field could be)."""
        if via_token:
            return False
        headers = dict(scope.get("headers") or [])
        given = headers.get(CSRF_HEADER.encode())
        if given is None:
            return not headers.get(b"content-type", b"").decode("latin-1").startswith(FORM_TYPES)
        expected = self.sessions.expected_csrf(scope.get("session") or {})
        return not isinstance(expected, str) or not hmac.compare_digest(expected.encode(), given)

    async def _user(self, scope: Scope) -> tuple[User | None, bool]:
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            token = token.strip()
            user = self.users.by_token(token) if scheme.lower() == "bearer" and token else None
            if user is None and scheme.lower() == "bearer" and self._is_viewer_token(token):
                user = LOCAL_VIEWER
            return user, True  # a bad token is refused even with a cookie: no mixing
        cookie = scope.get("session")
        if not cookie or is_public(scope["path"]):  # public routes need nobody: no database read
            return None, False
        return await run_in_threadpool(self.sessions.user, cookie), False

    def _is_viewer_token(self, token: str) -> bool:
        if self._viewer_token is None or not token:
            return False
        return hmac.compare_digest(token.encode("latin-1"), self._viewer_token)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        if wants_html(scope):
            target = scope["path"] + (
                "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
            )
            headers = [
                (b"location", f"/login?next={quote(target, safe='')}".encode()),
                (b"cache-control", b"no-store"),
            ]
            await send({"type": "http.response.start", "status": 303, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        detail = "sign in first (a session cookie or Authorization: Bearer TOKEN)"
        await _json(send, 401, detail, ((b"www-authenticate", b"Bearer"),))


def _local_read(scope: Scope) -> bool:
    return scope["method"] in LOCAL_VIEWER_READS and scope["path"].startswith("/api/")


def _is_write(scope: Scope) -> bool:
    path = scope["path"]
    return scope["method"] not in SAFE_METHODS and path not in VIEWER_WRITES and not is_public(path)


def _body_withheld(receive: Receive, send: Send) -> tuple[Receive, Send]:
    """The request as if its body were empty (none of it read), and its answer closing the
    connection (the unread rest cannot be skipped to reach a next request)."""
    given = False

    async def empty() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": b"", "more_body": False}
        while (message := await receive())["type"] != "http.disconnect":
            pass
        return message

    async def closing(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        await send(message)

    return empty, closing


async def _json(send: Send, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = orjson.dumps({"detail": detail})
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


def current_user(request: Request) -> User:
    user = getattr(request.state, "user", None)
    if user is None:  # the middleware lets nobody unsigned past, save on public routes
        raise HTTPException(401, "sign in first")
    return user


async def check_csrf(request: Request) -> None:
    """A cookie-session write must carry the session's CSRF token (403 otherwise)."""
    if request.method in SAFE_METHODS or getattr(request.state, "via_token", False):
        return
    expected = sessions_of(request).expected_csrf(request.session)
    given = request.headers.get(CSRF_HEADER)
    if given is None and request.headers.get("content-type", "").startswith(FORM_TYPES):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not isinstance(expected, str) or not given or not hmac.compare_digest(expected, given):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")


async def writer(request: Request) -> User:
    """The user, if an admin (checked first: it needs no body) whose request passes the CSRF
    check; 403 otherwise."""
    user = current_user(request)
    if not user.is_admin:
        raise HTTPException(403, f"{user.name} is a viewer: only an admin may change this")
    await check_csrf(request)
    return user
