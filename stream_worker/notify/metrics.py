"""Prometheus metrics of the notify service (its own registry; served by the shared HealthServer).
Targets are labelled by name (never by URL: a URL may hold a resolved secret)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream_worker.contracts import topics
from stream_worker.service.metrics import ServiceMetrics

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300)


class NotifyMetrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker_notify")
        r = self.registry
        self.alerts_in, self.invalid_alerts = self.input_counters(
            "alerts", "Alerts", topics.ALERTS.name, "PlateAlert"
        )
        self.sightings_in, self.invalid_sightings = self.input_counters(
            "sightings", "Sightings", topics.SIGHTINGS.name, "PlateSighting"
        )
        self.visits_in, self.invalid_visits = self.input_counters(
            "visits", "Visit events", topics.VISITS.name, "PlateVisit"
        )
        self.sent = Counter(
            "stream_worker_notify_sent",
            "Deliveries the target acknowledged (a 2xx, an MQTT PUBACK).",
            ["target"],
            registry=r,
        )
        self.retried = Counter(
            "stream_worker_notify_retried",
            "Failed attempts tried again after a backoff.",
            ["target"],
            registry=r,
        )
        self.failed = Counter(
            "stream_worker_notify_failed",
            "Deliveries given up (retry budget spent, or refused for good) and published to the DLQ.",
            ["target"],
            registry=r,
        )
        self.held = Counter(
            "stream_worker_notify_held",
            "Deliveries held because a secret their target names is missing (those queued behind wait too).",
            ["target"],
            registry=r,
        )
        self.dropped = Counter(
            "stream_worker_notify_dropped",
            "Deliveries left undelivered because their target was removed or disabled meanwhile.",
            ["target"],
            registry=r,
        )
        self.latency = Histogram(
            "stream_worker_notify_latency_seconds",
            "From the alert's alerted_at to the target's acknowledgement.",
            ["target"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.queued = Gauge(
            "stream_worker_notify_queued", "Deliveries waiting in the target's lane.", ["target"], registry=r
        )
        self.pending = Gauge(
            "stream_worker_notify_pending",
            "Deliveries not yet settled (holding back the commit position).",
            registry=r,
        )
        self.targets = Gauge("stream_worker_notify_targets", "Targets delivered to.", registry=r)
        self.targets_skipped = Counter(
            "stream_worker_notify_targets_skipped",
            "Target records that do not decode (skipped).",
            registry=r,
        )

    def show_target(self, name: str) -> None:
        """Export a target's counters at 0 before its first delivery, so that 0 reads as none."""
        for counter in (self.sent, self.retried, self.failed, self.held, self.dropped):
            counter.labels(name)
