"""The connector's Prometheus metrics, labelled by camera id only (never a URL).

Per-camera figures are read from the readers' own counters at scrape time (a collector), with the
totals of a camera's earlier readers (before a restart) kept, so the counters never go back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import Counter, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from stream_worker.connector.reader import CameraStats
from stream_worker.connector.states import CameraState
from stream_worker.service.metrics import ServiceMetrics

PREFIX = "stream_worker_connector"

COUNTERS = {  # metric name: help
    "frames_decoded": "Frames decoded from the camera's stream.",
    "frames_published": "Frames the broker acknowledged.",
    "frames_static": "Sampled frames the motion gate held back (not published unless as pre-roll).",
    "static_markers": "Static markers published: records with no image standing for a still frame.",
    "frames_dropped": "Frames dropped from the camera's full queue (the oldest first).",
    "frames_offered": "Frames with their image to publish, before shedding.",
    "frames_shed": "Frames left out because the workers were behind (a live camera's max_delay_s).",
    "reconnects": "Times the camera's source was opened again after a failure, a stall or its end.",
    "delivery_errors": "Frames the broker refused or did not acknowledge in time.",
}


@dataclass(frozen=True)
class CameraFigures:
    """One camera's figures at a scrape: totals (counters) and the live reader's stats."""

    camera_id: str
    totals: dict[str, int]
    stats: CameraStats
    with_motion: bool


def totals_of(stats: CameraStats, dropped: int) -> dict[str, int]:
    return {
        "frames_decoded": stats.decoded,
        "frames_published": stats.published,
        "frames_static": stats.static,
        "static_markers": stats.markers,
        "frames_dropped": dropped,
        "frames_offered": stats.offered,
        "frames_shed": stats.shed,
        "reconnects": stats.reconnects,
        "delivery_errors": stats.delivery_errors,
    }


class CamerasCollector(Collector):
    def __init__(self, figures: Callable[[], Iterable[CameraFigures]]) -> None:
        self._figures = figures

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        cameras = list(self._figures())
        for name, help_text in COUNTERS.items():
            family = CounterMetricFamily(f"{PREFIX}_camera_{name}", help_text, labels=["camera"])
            for camera in cameras:
                family.add_metric([camera.camera_id], camera.totals[name])
            yield family
        connected = GaugeMetricFamily(
            f"{PREFIX}_camera_connected", "1 while the camera's stream gives frames.", labels=["camera"]
        )
        since = GaugeMetricFamily(
            f"{PREFIX}_camera_seconds_since_last_frame",
            "Seconds since the camera's last decoded frame (absent before its first; with "
            "--static-key-frames-s a static camera's frames come a key-frame interval apart).",
            labels=["camera"],
        )
        motion = GaugeMetricFamily(
            f"{PREFIX}_camera_motion_share",
            "Share of the camera's sampled frames with motion (cameras with motion gating).",
            labels=["camera"],
        )
        now = time.monotonic()
        for camera in cameras:
            stats = camera.stats
            connected.add_metric([camera.camera_id], 1.0 if stats.state is CameraState.STREAMING else 0.0)
            last = stats.last_frame_mono
            if last is not None:
                since.add_metric([camera.camera_id], max(0.0, now - last))
            gated = stats.motion + stats.static
            if camera.with_motion and gated:
                motion.add_metric([camera.camera_id], stats.motion / gated)
        yield connected
        yield since
        yield motion


class ConnectorMetrics(ServiceMetrics):
    def __init__(self, figures: Callable[[], Iterable[CameraFigures]]) -> None:
        super().__init__(PREFIX)
        r = self.registry
        self.cameras = Gauge(f"{PREFIX}_cameras", "Cameras this replica reads.", registry=r)
        self.owned_partitions = Gauge(
            f"{PREFIX}_owned_partitions",
            "Partitions of the cameras topic assigned to this replica.",
            registry=r,
        )
        self.status_records = Counter(f"{PREFIX}_status_records", "Status records written.", registry=r)
        self.skipped_settings = Counter(
            f"{PREFIX}_skipped_settings", "Camera-settings records that could not be decoded.", registry=r
        )
        r.register(CamerasCollector(figures))
