"""Prometheus metrics of the sightings service (its own registry; served by the shared HealthServer)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream_worker.contracts import topics
from stream_worker.service.metrics import ServiceMetrics

READS_BUCKETS = (1, 2, 3, 5, 10, 20, 50, 100, 300)
DELAY_BUCKETS = (0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300)


class SightingsMetrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker_sightings")
        r = self.registry
        self.events_in, self.invalid_events = self.input_counters(
            "events", "Plate events", topics.PLATES.name, "PlateEvent"
        )
        self.reads_in = Counter("stream_worker_sightings_reads_in", "Plate reads consumed.", registry=r)
        self.sightings_out = Counter(
            "stream_worker_sightings_out",
            "Sightings acknowledged by the broker, by why their pass closed.",
            ["closed_by"],
            registry=r,
        )
        self.not_plates = Counter(
            "stream_worker_sightings_not_plates",
            "Sightings not published: their voted text is not a plate of the camera's format.",
            ["camera_id"],
            registry=r,
        )
        self.camera_settings_skipped = self.camera_settings_skipped_counter()
        self.unknown_region = Counter(
            "stream_worker_sightings_unknown_region",
            "Passes of cameras whose region this version does not know, gated by region auto's formats "
            "(logged).",
            registry=r,
        )
        self.replayed_groups = Counter(
            "stream_worker_sightings_replayed_groups",
            "Passes rebuilt after a restart from reads already published, not published again.",
            registry=r,
        )
        self.reads_per_sighting = Histogram(
            "stream_worker_sightings_reads_per_sighting",
            "Reads voted into one sighting.",
            buckets=READS_BUCKETS,
            registry=r,
        )
        self.delay = Histogram(
            "stream_worker_sightings_delay_seconds",
            "From a pass's last read (capture time) to its sighting's publication.",
            buckets=DELAY_BUCKETS,
            registry=r,
        )
        self.open_groups = Gauge("stream_worker_sightings_open_groups", "Passes still open.", registry=r)
        self.held = Gauge(
            "stream_worker_sightings_held",
            "Open passes and unacknowledged sightings holding back the commit.",
            registry=r,
        )
