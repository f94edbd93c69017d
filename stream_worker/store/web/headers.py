"""Headers on every answer of the console, errors and sign-in redirects included: not framed by
other sites, types not sniffed, no URL (plates in search queries) sent to other sites, a
Content-Security-Policy that lets only the console's own scripts, styles and pictures run or load
(no inline script, no third party), and nothing with plate data kept in any cache (only /static/
may be cached), so a picture does not outlive the session in the browser."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
]
NO_STORE = (b"cache-control", b"no-store")
CACHEABLE_PREFIX = "/static/"


def headers_for(path: str, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` with the security headers set (replacing any of the same name) and, outside
    /static/, `cache-control: no-store` in place of whatever the route said."""
    ours = list(SECURITY_HEADERS)
    if not path.startswith(CACHEABLE_PREFIX):
        ours.append(NO_STORE)
    names = {name for name, _ in ours}
    return [(name, value) for name, value in headers if name.lower() not in names] + ours


class SecurityHeadersMiddleware:
    """Outermost of the console's middleware: every answer that passes through gets the headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": headers_for(path, list(message.get("headers", [])))}
            await send(message)

        await self.app(scope, receive, sending)
