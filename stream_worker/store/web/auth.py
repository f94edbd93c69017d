"""Who is asking: a signed session cookie (the pages) or a bearer token (the API), checked by one
ASGI middleware in front of every route except the few public ones, so that a route added later is
closed by default. Writes need the admin role and, from a cookie session, the session's CSRF token
(a form field `csrf_token` or the `X-CSRF-Token` header); a bearer-token request carries no cookie,
so a forged cross-site request cannot use it.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import quote

import orjson
from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from stream_worker.store.web.users import User, Users

PUBLIC_PATHS = ("/login", "/healthz")
PUBLIC_PREFIXES = ("/static/",)
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def csrf_token(session: dict[str, Any]) -> str:
    """The session's CSRF token, made on first use."""
    token = session.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def wants_html(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    if path.startswith("/api/"):
        return False
    accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1")
    return "text/html" in accept or scope.get("method") == "GET"


class AuthMiddleware:
    """Puts the signed-in user on `request.state.user`, or answers 401 (API) / a redirect to the
    sign-in page (pages). Runs inside SessionMiddleware, so the session is decoded already."""

    def __init__(self, app: ASGIApp, users: Users) -> None:
        self.app, self.users = app, users

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        user, via_token = self._user(scope)
        scope.setdefault("state", {})
        scope["state"]["user"] = user
        scope["state"]["via_token"] = via_token
        if user is None and not is_public(scope["path"]):
            await self._refuse(scope, send)
            return
        await self.app(scope, receive, send)

    def _user(self, scope: Scope) -> tuple[User | None, bool]:
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            user = self.users.by_token(token.strip()) if scheme.lower() == "bearer" and token else None
            return user, True  # a bad token is refused even with a cookie: no mixing
        session = scope.get("session") or {}
        return self.users.get(session.get("user")), False

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
        body = orjson.dumps({"detail": "sign in first (a session cookie or Authorization: Bearer TOKEN)"})
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b"Bearer"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
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
    expected = request.session.get("csrf")
    given = request.headers.get(CSRF_HEADER)
    if given is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not isinstance(expected, str) or not given or not hmac.compare_digest(expected, given):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")


async def writer(request: Request) -> User:
    """The user, if an admin whose request passes the CSRF check; 403 otherwise."""
    await check_csrf(request)
    user = current_user(request)
    if not user.is_admin:
        raise HTTPException(403, f"{user.name} is a viewer: only an admin may change this")
    return user


class SignInLimiter:
    """At most MAX_FAILURES wrong passwords per (client address, user name) in WINDOW_S: after that
    sign-in answers 429 until the oldest failure ages out (guessing is slow; a user elsewhere is not
    locked out). In memory, per process."""

    MAX_FAILURES = 10
    WINDOW_S = 600.0

    def __init__(self) -> None:
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        times = self._failures.setdefault(key, deque())
        while times and times[0] <= now - self.WINDOW_S:
            times.popleft()
        return times

    def blocked_for_s(self, key: tuple[str, str]) -> float:
        now = time.monotonic()
        with self._lock:
            times = self._recent(key, now)
            return times[0] + self.WINDOW_S - now if len(times) >= self.MAX_FAILURES else 0.0

    def failed(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._recent(key, time.monotonic()).append(time.monotonic())
            if len(self._failures) > 10_000:  # bounded: forget the quietest
                self._failures = {k: v for k, v in self._failures.items() if v}
