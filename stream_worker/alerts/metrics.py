"""Prometheus metrics of the alerts service (its own registry; served by the shared HealthServer)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream_worker.contracts import topics
from stream_worker.service.metrics import ServiceMetrics

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)


class AlertsMetrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker_alerts")
        r = self.registry
        self.events_in, self.invalid_events = self.input_counters(
            "events", "Plate events", topics.PLATES.name, "PlateEvent"
        )
        self.sightings_in, self.invalid_sightings = self.input_counters(
            "sightings", "Sightings", topics.SIGHTINGS.name, "PlateSighting"
        )
        self.sightings_confirmed = Counter(
            "stream_worker_alerts_sightings_confirmed",
            "Sighting matches of an entry that the pass's reads already alerted (nothing published).",
            registry=r,
        )
        self.sightings_cooled = Counter(
            "stream_worker_alerts_sightings_cooled",
            "Sighting matches in the cooldown of their camera and entry's last alert (nothing published).",
            registry=r,
        )
        self.sightings_waiting = Gauge(
            "stream_worker_alerts_sightings_waiting",
            "Sightings consumed before their reads, waiting for the reads (a plates backlog).",
            registry=r,
        )
        self.sightings_waited_out = Counter(
            "stream_worker_alerts_sightings_waited_out",
            "Sightings decided without their reads, having waited --sighting-wait-s for them.",
            registry=r,
        )
        self.corrections_in = Counter(
            "stream_worker_alerts_corrections_in",
            "Corrections consumed (replays included; tombstones and invalid records too).",
            registry=r,
        )
        self.invalid_corrections = Counter(
            "stream_worker_alerts_invalid_corrections",
            "Records of the corrections topic that are not Corrections (skipped).",
            registry=r,
        )
        self.corrections_already_alerted = Counter(
            "stream_worker_alerts_corrections_already_alerted",
            "Correction matches whose alert was published before (nothing published again).",
            registry=r,
        )
        self.history_remembered = Counter(
            "stream_worker_alerts_history_remembered",
            "Read alerts read back from the alerts topic (an earlier run's, another replica's) into the "
            "memory of alerted passes.",
            registry=r,
        )
        self.alerts_out = Counter(
            "stream_worker_alerts_out",
            "Alerts acknowledged by the broker, by watch list, match kind and origin (read: a read of "
            "the pass; sighting: its voted sighting, no read having alerted; correction: an operator's "
            "corrected text) (replays included).",
            ["list", "kind", "origin"],
            registry=r,
        )
        self.latency = Histogram(
            "stream_worker_alerts_match_latency_seconds",
            "From the read's PlateEvent processed_at to its alert acknowledged by the broker.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.watchlist_size = Gauge(
            "stream_worker_alerts_watchlist_size",
            "Entries on the watch list (expired ones included).",
            registry=r,
        )
        self.watchlist_changes = Counter(
            "stream_worker_alerts_watchlist_changes",
            "Watch-list records applied after the start (entries and removals).",
            registry=r,
        )
        self.watchlist_skipped = Counter(
            "stream_worker_alerts_watchlist_skipped",
            "Watch-list records that do not decode (skipped).",
            registry=r,
        )
        self.open_passes = Gauge("stream_worker_alerts_open_passes", "Passes still open.", registry=r)
        self.held = Gauge("stream_worker_alerts_held", "Passes holding back the commit position.", registry=r)
        self.sightings_held = Gauge(
            "stream_worker_alerts_sightings_held",
            "Sighting alerts not yet acknowledged, holding back the sightings commit position.",
            registry=r,
        )
        self.recent_passes = Gauge(
            "stream_worker_alerts_recent_passes",
            "Read passes that alerted, remembered to tell whether a sighting's pass already alerted.",
            registry=r,
        )
