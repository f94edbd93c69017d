"""The worker's Prometheus metrics; they are served with `/healthz` and `/readyz` by the shared
`HealthServer` (stream_worker/service/http.py).

Metrics live in their own registry (not the process-global one) so that several workers can
coexist in one test process. `/readyz` says the worker has partitions assigned and Triton is
ready, i.e. it can make progress.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream_worker.service.http import read_metric
from stream_worker.service.metrics import ServiceMetrics

BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker")
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
        self.lag_seconds = Gauge(
            "stream_worker_lag_seconds",
            "How far behind the worker is: seconds since the last frame it took was published (0 once "
            "it has taken every frame offered).",
            registry=r,
        )
        self.paused = Gauge(
            "stream_worker_paused", "1 while consumption is paused (backpressure).", registry=r
        )
        self.triton_errors = Counter(
            "stream_worker_triton_errors", "Failed Triton requests by kind.", ["kind"], registry=r
        )
        self.plates_masked = Counter(
            "stream_worker_plates_masked",
            "Plates dropped because their box centre lies in one of the camera's masks.",
            ["camera"],
            registry=r,
        )
        self.frames_not_examined = Counter(
            "stream_worker_frames_not_examined",
            "Frames of cameras with motion gating in which nothing moved: not sent to Triton, their "
            "events say examined false.",
            ["camera"],
            registry=r,
        )
        self.camera_settings_skipped = self.camera_settings_skipped_counter()
        self.frames_unknown_region = Counter(
            "stream_worker_frames_unknown_region",
            "Frames of cameras whose region this version does not know, read as region auto (logged).",
            registry=r,
        )
        self.plates_unread = Counter(
            "stream_worker_plates_unread",
            "Plates whose recognizers' output could not be read through the region's formats: published "
            "with the recognizer's plain text, format_valid false (logged).",
            ["camera"],
            registry=r,
        )
        self.plates_too_narrow = Counter(
            "stream_worker_plates_too_narrow",
            "Plates dropped because their box is narrower than the camera's min_plate_width.",
            ["camera"],
            registry=r,
        )


def read_frames_in(metrics_url: str, timeout_s: float = 5.0) -> int | None:
    """A running worker's count of frames received from the broker, read from its `/metrics`.

    What the demo and the benchmark compare their outputs with, to tell a frame the worker lost
    from one the broker never delivered. None when the endpoint cannot be read.
    """
    value = read_metric(metrics_url, "stream_worker_frames_in_total", timeout_s)
    return int(value) if value is not None else None
