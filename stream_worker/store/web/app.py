"""The console's FastAPI application: pages, the API (/api, schema at /api/openapi.json; no docs
page, whose Swagger UI came from a CDN), the live feed, static files; sign-in required everywhere
but /login, /static and /healthz, a viewer's writes refused with their bodies unread (auth.py);
every body capped to what its route takes (bodies.py); the security headers on every answer (headers.py);
bad input answered with a 4xx that says why, never a traceback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import SessionMiddleware

from stream_worker.contracts.running_up import read_token
from stream_worker.store.database import Database
from stream_worker.store.sessions import Lifetimes
from stream_worker.store.settings import StoreSettings
from stream_worker.store.web import api, live, pages
from stream_worker.store.web.auth import AuthMiddleware
from stream_worker.store.web.backend import Backend
from stream_worker.store.web.bodies import BodyLimitMiddleware, route_limits
from stream_worker.store.web.headers import SecurityHeadersMiddleware, headers_for
from stream_worker.store.web.limiter import SignInLimiter
from stream_worker.store.web.sessions import SessionBook
from stream_worker.store.web.users import Users, announce, load_or_create, secret_key

log = logging.getLogger("stream_worker.store.web")
HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "stream_worker_session"


def create_app(
    settings: StoreSettings,
    database: Database,
    kafka_config: Mapping[str, str],
    users: Users | None = None,
    skipped: Callable[[str], None] = lambda topic: None,
) -> FastAPI:
    """The console over `database`, writing watch-list and camera changes to the broker that
    `kafka_config` (librdkafka settings, with bootstrap.servers) names. `users` default: the users
    file, else the generated admin (users.load_or_create; a new password is printed once).
    `skipped(topic)`: a record of a followed topic was not usable (the store counts them). The
    followed topics (backend.Views) start with the app and stop with it."""
    if users is None:
        users, password = load_or_create(settings.users_file, settings.data_dir)
        if password is not None:
            port = settings.console_port
            announce(password, settings.data_dir, f"http://{settings.console_host}:{port}/" if port else None)
    app = FastAPI(
        title="stream-worker store",
        summary="Plate history: search, sightings, alerts, the watch list and the cameras.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        lifespan=_following,
    )
    key = secret_key(settings.data_dir, settings.session_key_file)
    lifetimes = Lifetimes(settings.session_idle_s, settings.session_lifetime_s)
    sessions = SessionBook(database, users, lifetimes, key)
    limiter = SignInLimiter(settings.sign_in_clients, settings.sign_in_parallel)
    app.state.backend = Backend(
        settings, database, kafka_config, users, sessions, sign_ins=limiter, skipped=skipped
    )
    app.include_router(api.router)
    app.include_router(live.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> PlainTextResponse:
        return PlainTextResponse("ok")

    _handle_errors(app)
    # Middleware run outermost last: the cookie is decoded before its session is looked up.
    app.add_middleware(AuthMiddleware, users=users, sessions=sessions, viewer_token=_viewer_token(settings))
    app.add_middleware(
        SessionMiddleware,
        secret_key=key,
        session_cookie=SESSION_COOKIE,
        max_age=max(1, int(settings.session_lifetime_s)),  # the browser's copy; the database decides
        same_site="lax",
        https_only=settings.secure_cookies,
    )
    # Before the session and the sign-in: no body is read past what its route takes (bodies.py).
    app.add_middleware(BodyLimitMiddleware, limit_of=route_limits())
    app.add_middleware(SecurityHeadersMiddleware)  # outermost: redirects and refusals get them too
    return app


def _viewer_token(settings: StoreSettings) -> str | None:
    """The local viewer token (auth.py), if a file is configured and holds one."""
    if settings.viewer_token_file is None:
        return None
    token = read_token(settings.viewer_token_file)
    if token is None:
        log.warning(
            "console: no viewer token in the viewer token file: only users sign in",
            extra={"path": str(settings.viewer_token_file)},
        )
    return token


@asynccontextmanager
async def _following(app: FastAPI) -> AsyncIterator[None]:
    backend: Backend = app.state.backend
    backend.views  # noqa: B018 - started now: the first page finds the topics read
    try:
        yield
    finally:
        backend.close()


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", "")


def _answer(request: Request, status: int, detail: str) -> Response:
    if _is_api(request):
        return JSONResponse({"detail": detail}, status_code=status)
    response = pages.render(request, "error.html", status_code=status, status=status, detail=detail)
    return response


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        detail = error.detail if isinstance(error.detail, str) else "refused"
        response = _answer(request, error.status_code, detail)
        if error.headers:
            response.headers.update(error.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, error: RequestValidationError) -> Response:
        reasons = "; ".join(
            f"{'.'.join(str(part) for part in item.get('loc', ()))}: {item.get('msg')}"
            for item in error.errors()
        )
        return _answer(request, 422, reasons[:2000] or "invalid request")

    @app.exception_handler(OverflowError)
    async def out_of_range(request: Request, error: OverflowError) -> Response:
        # A number or a date past what Python or the database holds (year 9999 with an offset, a
        # 64-bit column): bad input wherever it was not caught before.
        return _answer(request, 422, "a number or a date in the request is out of range")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> Response:
        # Outside every middleware (the session's, the headers'): no template, no session, no
        # detail of the error; the security headers set here.
        log.exception("console: unexpected error on %s %s", request.method, request.url.path)
        response = JSONResponse({"detail": "internal error (logged)"}, status_code=500)
        response.raw_headers = headers_for(request.url.path, response.raw_headers)
        return response
