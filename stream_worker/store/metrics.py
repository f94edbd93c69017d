"""Prometheus metrics of the history store (its own registry; served by the shared HealthServer)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from stream_worker.service.metrics import ServiceMetrics

WRITE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)


class StoreMetrics(ServiceMetrics):
    def __init__(self) -> None:
        super().__init__("stream_worker_store")
        r = self.registry
        self.records_in = Counter(
            "stream_worker_store_records_in",
            "Records consumed, by topic (replays included).",
            ["topic"],
            registry=r,
        )
        self.invalid_records = Counter(
            "stream_worker_store_invalid_records",
            "Records that are not the topic's contract (dead-lettered, committed).",
            ["topic"],
            registry=r,
        )
        self.dead_letters = Counter(
            "stream_worker_store_dead_letters",
            "Records sent to the dead-letter topic (--dlq-topic), by topic and reason.",
            ["topic", "reason"],
            registry=r,
        )
        self.rows_written = Counter(
            "stream_worker_store_rows_written",
            "Rows inserted, by table (a replayed record inserts none).",
            ["table"],
            registry=r,
        )
        self.write_failures = Counter(
            "stream_worker_store_write_failures",
            "Database transactions that failed (the batch is written again, nothing is committed before).",
            registry=r,
        )
        self.write_seconds = Histogram(
            "stream_worker_store_write_seconds", "One batch's transaction.", buckets=WRITE_BUCKETS, registry=r
        )
        self.retention_deleted = Counter(
            "stream_worker_store_retention_deleted",
            "Rows deleted by the retention period, by table.",
            ["table"],
            registry=r,
        )
        self.console_skipped_records = Counter(
            "stream_worker_store_console_skipped_records",
            "Records of a topic the console follows that it could not use (wrong types), by topic.",
            ["topic"],
            registry=r,
        )
        self.database_up = Gauge(
            "stream_worker_store_database_up", "1 while the last transaction succeeded.", registry=r
        )
