"""librdkafka configurations of the services' consumers and producers, and the lag they report.

Both services commit explicitly after their output is acknowledged, so auto-commit and the auto
offset store are off; both publish with the idempotent producer (acks=all), which keeps a
partition's order through its own retries. A user's `kafka_config` overrides the defaults given
here but never the settings at-least-once depends on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from stream_worker.service.settings import ServiceSettings

log = logging.getLogger(__name__)

Partition = tuple[str, int]  # (topic, partition)
STATISTICS_INTERVAL_MS = 5000  # how often librdkafka reports consumer lag


def consumer_config(settings: ServiceSettings, group_id: str, **defaults: object) -> dict[str, object]:
    return {
        "statistics.interval.ms": STATISTICS_INTERVAL_MS,
        **defaults,
        **settings.kafka_config,
        "bootstrap.servers": settings.bootstrap_servers,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": settings.auto_offset_reset,
        "session.timeout.ms": settings.session_timeout_ms,
        "logger": logging.getLogger("rdkafka.consumer"),
    }


def producer_config(settings: ServiceSettings, **defaults: object) -> dict[str, object]:
    return {
        "linger.ms": 5,
        **defaults,
        **settings.kafka_config,
        "bootstrap.servers": settings.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "logger": logging.getLogger("rdkafka.producer"),
    }


def consume_records(consumer: Consumer, max_records: int, timeout_s: float) -> list[Message]:
    """Up to `max_records` records of one poll; broker-side errors are logged and skipped (end of
    partition is no error), a fatal one raises."""
    records = []
    for message in consumer.consume(max(1, max_records), timeout_s):
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise KafkaException(error)
        elif error.code() != KafkaError._PARTITION_EOF:
            log.warning("consumer error", extra={"error": error.str(), "code": error.name()})
    return records


def partitions(items: Iterable[TopicPartition]) -> list[Partition]:
    return [(item.topic, item.partition) for item in items]


def lag_from_statistics(statistics_json: str) -> dict[Partition, int]:
    """librdkafka's own per-partition consumer lag (high watermark minus committed/read position)."""
    lags = {}
    for topic, topic_stats in orjson.loads(statistics_json).get("topics", {}).items():
        for partition, stats in topic_stats.get("partitions", {}).items():
            lag = stats.get("consumer_lag", -1)
            if int(partition) >= 0 and lag >= 0:
                lags[(topic, int(partition))] = lag
    return lags
