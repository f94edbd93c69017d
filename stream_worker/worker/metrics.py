"""Prometheus metrics and the worker's small HTTP server: `/metrics`, `/healthz`, `/readyz`.

Metrics live in their own registry (not the process-global one) so that several workers can
coexist in one test process. `/healthz` says the main loop is turning; `/readyz` says the worker
has partitions assigned and Triton is ready, i.e. it can make progress.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

log = logging.getLogger(__name__)

BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
HEALTHY_LOOP_AGE_S = 30.0  # a main loop silent for this long is stuck


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.frames_in = Counter(
            "stream_worker_frames_in", "Frames consumed from the input topic.", registry=r
        )
        self.events_out = Counter(
            "stream_worker_events_out", "PlateEvents acknowledged by the broker.", registry=r
        )
        self.dead_letters = Counter(
            "stream_worker_dead_letters", "Dead letters acknowledged by the broker.", ["reason"], registry=r
        )
        self.batch_size = Histogram(
            "stream_worker_batch_frames", "Frames per Triton request.", buckets=BATCH_SIZE_BUCKETS, registry=r
        )
        self.batch_latency = Histogram(
            "stream_worker_batch_latency_seconds",
            "Duration of one Triton request.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.frame_latency = Histogram(
            "stream_worker_frame_latency_seconds",
            "From consuming a frame to building its event.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.inflight_batches = Gauge(
            "stream_worker_inflight_batches", "Batches sent to Triton and not yet committed.", registry=r
        )
        self.pending_frames = Gauge(
            "stream_worker_pending_frames", "Frames consumed and not yet acknowledged.", registry=r
        )
        self.paused = Gauge(
            "stream_worker_paused", "1 while consumption is paused (backpressure).", registry=r
        )
        self.triton_errors = Counter(
            "stream_worker_triton_errors", "Failed Triton requests by kind.", ["kind"], registry=r
        )
        self.publish_errors = Counter(
            "stream_worker_publish_errors", "Records the broker refused (they are retried).", registry=r
        )
        self.consumer_lag = Gauge(
            "stream_worker_consumer_lag",
            "High watermark minus the worker's position, per assigned partition.",
            ["topic", "partition"],
            registry=r,
        )
        self.commits = Counter("stream_worker_commits", "Offset commits accepted by the broker.", registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    """Serves the metrics and probes from a daemon thread."""

    def __init__(
        self,
        metrics: Metrics,
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


def read_frames_in(metrics_url: str, timeout_s: float = 5.0) -> int | None:
    """A running worker's count of frames received from the broker, read from its `/metrics`.

    What the demo and the benchmark compare their outputs with, to tell a frame the worker lost
    from one the broker never delivered. None when the endpoint cannot be read.
    """
    try:
        with urllib.request.urlopen(metrics_url, timeout=timeout_s) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):
        return None
    for line in text.splitlines():
        if line.startswith("stream_worker_frames_in_total "):
            return int(float(line.split()[1]))
    return None
