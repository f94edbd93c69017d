"""Prometheus metrics of the visits service (its own registry; served by the shared HealthServer)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from stream_worker.contracts import topics
from stream_worker.service.metrics import ServiceMetrics


class VisitsMetrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker_visits")
        r = self.registry
        self.sightings_in, self.invalid_sightings = self.input_counters(
            "sightings", "Sightings", topics.SIGHTINGS.name, "PlateSighting"
        )
        self.events_out = Counter(
            "stream_worker_visits_events_out",
            "Visit events acknowledged by the broker, by kind (opened, closed, overstay).",
            ["event"],
            registry=r,
        )
        self.unmatched_exits = Counter(
            "stream_worker_visits_unmatched_exits",
            "Exit sightings that closed no open visit (no entry seen, or read too differently).",
            registry=r,
        )
        self.late_entries = Counter(
            "stream_worker_visits_late_entries",
            "Entry sightings older than their plate's open visit (consumed late), passed over.",
            registry=r,
        )
        self.camera_settings_skipped = self.camera_settings_skipped_counter()
        self.watchlist_skipped = Counter(
            "stream_worker_visits_watchlist_skipped",
            "Records of the watchlist topic that are not valid entries (skipped).",
            registry=r,
        )
        self.history_events = Counter(
            "stream_worker_visits_history_events",
            "Visit events read back from the visits topic at the start.",
            registry=r,
        )
        self.open_visits = Gauge(
            "stream_worker_visits_open", "Visits open now (vehicles on site).", registry=r
        )
