"""What every service's Prometheus metrics share: an own registry (several services can live in one
test process) and the Kafka-side figures, named under the service's prefix."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from stream_worker.service.gaps import GapOutcome, SettledGap


class ServiceMetrics:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.registry = r = CollectorRegistry()
        self.publish_errors = Counter(
            f"{prefix}_publish_errors", "Records the broker refused (they are retried).", registry=r
        )
        self.consumer_lag = Gauge(
            f"{prefix}_consumer_lag",
            "High watermark minus the service's position, per assigned partition.",
            ["topic", "partition"],
            registry=r,
        )
        self.commits = Counter(f"{prefix}_commits", "Offset commits accepted by the broker.", registry=r)
        self.consumer_offset_gaps = Counter(
            f"{prefix}_consumer_offset_gaps",
            "Offset gaps in consumed partitions, by outcome: healed (the missing records were read "
            "again) or accepted (still missing after the bounded tries).",
            ["topic", "outcome"],
            registry=r,
        )
        self.commit_failures = Counter(
            f"{prefix}_commit_failures",
            "Partition commits that failed (the broker refused the request or that partition's "
            "offset); the offsets stay committable and are committed on a later turn.",
            ["topic"],
            registry=r,
        )

    def input_counters(self, noun: str, what: str, topic: str, contract: str) -> tuple[Counter, Counter]:
        """`<prefix>_<noun>_in` and `<prefix>_invalid_<noun>`: an input topic's records, and those
        that are not its contract (for a `Decoder`, service/records.py)."""
        consumed = Counter(
            f"{self.prefix}_{noun}_in", f"{what} consumed (replays included).", registry=self.registry
        )
        invalid = Counter(
            f"{self.prefix}_invalid_{noun}",
            f"Records of the {topic} topic that are not {contract}s (skipped, logged).",
            registry=self.registry,
        )
        return consumed, invalid

    def camera_settings_skipped_counter(self) -> Counter:
        return Counter(
            f"{self.prefix}_camera_settings_skipped",
            "Records of the cameras topic that are not valid settings (skipped, logged).",
            registry=self.registry,
        )

    def show_consumed_topic(self, topic: str) -> None:
        """Export the topic's gap and commit-failure counts at 0 before any, so that 0 reads as none."""
        self.show_gaps(topic)
        self.commit_failures.labels(topic)

    def show_gaps(self, topic: str) -> None:
        """Export the topic's gap counts at 0 before any gap, so that 0 reads as none."""
        for outcome in GapOutcome:
            self.consumer_offset_gaps.labels(topic, outcome.value)

    def count_gap(self, gap: SettledGap) -> None:
        self.consumer_offset_gaps.labels(gap.topic, gap.outcome.value).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
