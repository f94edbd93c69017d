"""What every service's Prometheus metrics share: an own registry (several services can live in one
test process) and the Kafka-side figures, named under the service's prefix."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class ServiceMetrics:
    def __init__(self, prefix: str) -> None:
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

    def render(self) -> bytes:
        return generate_latest(self.registry)
