"""The demo's own webhook receiver and the notify service's target pointing at it.

The receiver listens on 127.0.0.1 (a free port) and takes the notify service's POSTs as any
receiver would: it checks `X-Stream-Worker-Signature` against the run's secret (random, given to
notify as the env variable the target names, never written anywhere) and keeps one arrival per
`X-Stream-Worker-Event` (a retry repeats the id). The target sits on loopback, which notify
refuses unless started with `--allow-private-targets`: that flag is the whole service's, not the
target's (`NotifySettings`), so the demo's notify allows every private target, as a test would;
production leaves it off.
"""

from __future__ import annotations

import hmac
import http.server
import secrets
import threading
from collections.abc import Callable

import orjson

from stream_worker.contracts.notify import parse_target
from stream_worker.demo.report import Arrival
from stream_worker.notify.targets import write_target
from stream_worker.notify.webhook import EVENT_HEADER, KIND_HEADER, SIGNATURE_HEADER, signature

TARGET_NAME = "demo-webhook"
SECRET_ENV = "DEMO_WEBHOOK_SECRET"  # in notify: STREAM_WORKER_SECRET_DEMO_WEBHOOK_SECRET
PATH = "/hook"
MAX_BODY_BYTES = 1 << 20


class WebhookReceiver:
    """A local HTTP server in a thread; `arrivals` by event id, the first of each id kept."""

    def __init__(self) -> None:
        self.secret = secrets.token_urlsafe(24)
        self.arrivals: dict[str, Arrival] = {}
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._take))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="demo-webhook", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{PATH}"

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()  # waits for serve_forever: only once it runs
        self._server.server_close()

    def received(self) -> dict[str, Arrival]:
        with self._lock:
            return dict(self.arrivals)

    def write_target(self, bootstrap: str, topic: str) -> None:
        """The notify target: every alert (no rules) to this receiver, signed with the run's secret."""
        target = parse_target({"type": "webhook", "url": self.url, "secret": f"${{{SECRET_ENV}}}"})
        write_target(bootstrap, TARGET_NAME, target, topic)

    def _take(self, headers: dict[str, str], body: bytes) -> int:
        event_id = headers.get(EVENT_HEADER.lower(), "")
        claimed = headers.get(SIGNATURE_HEADER.lower(), "")
        try:
            event = orjson.loads(body)
        except orjson.JSONDecodeError:
            return 400
        if not event_id or not isinstance(event, dict):
            return 400
        arrival = Arrival(
            event_id=event_id,
            kind=headers.get(KIND_HEADER.lower(), "?"),
            plate=str(event.get("plate") or event.get("text") or "?"),
            camera_id=str(event.get("camera_id", "?")),
            signature_ok=hmac.compare_digest(claimed, signature(body, self.secret)),
            picture_url=event.get("picture_url"),
        )
        with self._lock:
            self.arrivals.setdefault(event_id, arrival)
        return 200


def _handler(take: Callable[[dict[str, str], bytes], int]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != PATH or not 0 < length <= MAX_BODY_BYTES:
                self._answer(404 if self.path != PATH else 400)
                return
            body = self.rfile.read(length)
            self._answer(take({name.lower(): value for name, value in self.headers.items()}, body))

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:  # the demo prints what arrived, not each request
            pass

    return Handler
