"""librdkafka configurations of the services' consumers and producers, and the lag they report.

Both services commit explicitly after their output is acknowledged, so auto-commit and the auto
offset store are off; both publish fully acknowledged and in order (`delivery_config`). A user's
`kafka_config` overrides the defaults given here but never the settings at-least-once depends on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from stream_worker.service.gaps import GapHealer
from stream_worker.service.missing_topics import MissingTopics, is_missing_topic
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


def delivery_config(local_broker: bool) -> dict[str, object]:
    """How a producer of ours makes sure a record is stored once, in its partition's order.

    On Kafka: the idempotent producer (acks=all), which keeps order through its own retries. On
    the embedded broker (Tansu 0.6): plain acks=all retries with one request in flight, which keep
    the order too. Tansu counts an idempotent batch's sequence number before it stores the batch,
    so a batch in flight when a durable broker is killed is answered as a duplicate on its retry
    and lost (1 record in 4 of 6 SIGKILL runs; none with these settings).
    """
    if local_broker:
        return {"enable.idempotence": False, "acks": "all", "max.in.flight.requests.per.connection": 1}
    return {"enable.idempotence": True, "acks": "all"}


def producer_config(settings: ServiceSettings, **defaults: object) -> dict[str, object]:
    return {
        "linger.ms": 5,
        **defaults,
        **settings.kafka_config,
        "bootstrap.servers": settings.bootstrap_servers,
        **delivery_config(settings.local_broker),
        "logger": logging.getLogger("rdkafka.producer"),
    }


def consume_records(
    consumer: Consumer,
    max_records: int,
    timeout_s: float,
    gaps: GapHealer | None = None,
    missing: MissingTopics | None = None,
) -> list[Message]:
    """Up to `max_records` records of one poll; broker-side errors are logged and skipped (end of
    partition is no error), a fatal one raises. With `missing`, a subscribed topic the broker does
    not have goes there (said once, looked for until it exists) rather than to the log.

    With `gaps`, only the records to process in offset order come back (see service/gaps.py):
    duplicates are dropped, and a partition with an offset gap loses the rest of this poll's
    records and is sought back to its expected offset. A seek the consumer refuses (its fetch
    not started yet) is made again before the next poll.
    """
    if gaps is not None:
        seek_gaps(consumer, gaps)
    records = []
    for message in consumer.consume(max(1, max_records), timeout_s):
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise KafkaException(error)
        elif missing is not None and is_missing_topic(error) and message.topic():
            missing.saw(message.topic())
        elif error.code() != KafkaError._PARTITION_EOF:
            log.warning("consumer error", extra={"error": error.str(), "code": error.name()})
    if gaps is None:
        return records
    records = gaps.filter(records, _position)
    seek_gaps(consumer, gaps)
    return records


def _position(message: Message) -> tuple[Partition, int]:
    return (message.topic(), message.partition()), message.offset()


def seek_gaps(consumer: Consumer, gaps: GapHealer) -> None:
    """Make the seeks `gaps` asks for; one the consumer refuses stays due for the next call."""
    for (topic, partition), offset in gaps.seeks().items():
        try:
            consumer.seek(TopicPartition(topic, partition, offset))
        except KafkaException as error:
            log.debug(
                "cannot seek back to an offset gap yet",
                extra={"topic": topic, "partition": partition, "offset": offset, "error": str(error)},
            )
            gaps.seek_refused((topic, partition))
        else:
            gaps.seeked((topic, partition))


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
