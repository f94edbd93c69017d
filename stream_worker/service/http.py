"""The services' small HTTP server: `/metrics`, `/healthz`, `/readyz`, from a daemon thread.

`/healthz` says the main loop is turning (a loop silent for `HEALTHY_LOOP_AGE_S` is stuck and the
probe fails, so the orchestrator restarts it); `/readyz` asks the service whether it can make
progress, and says why not.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from prometheus_client import CONTENT_TYPE_LATEST

log = logging.getLogger(__name__)

HEALTHY_LOOP_AGE_S = 30.0  # a main loop silent for this long is stuck


class Renders(Protocol):
    def render(self) -> bytes: ...


class HealthServer:
    """Serves the metrics and probes from a daemon thread."""

    def __init__(
        self,
        metrics: Renders,
        host: str,
        port: int,
        is_ready: Callable[[], tuple[bool, str]],
        loop_age_s: Callable[[], float],
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    age = outer.loop_age_s()
                    healthy = age < HEALTHY_LOOP_AGE_S
                    body = f"{'ok' if healthy else 'stuck'}: main loop turned {age:.1f} s ago\n"
                    self._send(200 if healthy else 503, body.encode())
                elif path == "/readyz":
                    ready, why = outer.is_ready()
                    self._send(
                        200 if ready else 503, f"{'ready' if ready else 'not ready'}: {why}\n".encode()
                    )
                else:
                    self._send(404, b"not found: try /metrics, /healthz or /readyz\n")

            def _send(
                self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("http " + format % args)

        self.is_ready = is_ready
        self.loop_age_s = loop_age_s
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="http", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and free the port; also right after a failed start-up, before `start`
        (socketserver's shutdown would wait forever for a loop that never ran)."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


class LoopClock:
    """When the main loop last turned, for `/healthz`."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def tick(self) -> None:
        self._last = time.monotonic()

    def age_s(self) -> float:
        return time.monotonic() - self._last


def read_metric(metrics_url: str, name: str, timeout_s: float = 5.0) -> float | None:
    """One unlabelled sample of a running service's /metrics; None when it cannot be read."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=timeout_s) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None
