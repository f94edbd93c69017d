"""The notify service's delivery log as the console shows it: the newest records of the plain
`notify.deliveries` topic (the last TAIL of each partition), newest first. A record that is not a
`NotifyDelivery` is left out; a missing topic is an empty log (notify has delivered nothing)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import TopicPartition
from pydantic import ValidationError

from stream_worker.contracts.notify import NotifyDelivery
from stream_worker.service.compacted import side_consumer, topic_partitions

TAIL = 100  # records read back from each partition's end


def recent_deliveries(
    bootstrap_servers: str, topic: str, config: Mapping[str, str], timeout_s: float, limit: int = TAIL
) -> list[NotifyDelivery]:
    """The newest `limit` deliveries (KafkaException / CompactedTopicError when the broker fails)."""
    consumer = side_consumer(bootstrap_servers, config, "console-deliveries")
    try:
        partitions = topic_partitions(consumer, topic, timeout_s) or []
        ends: dict[int, int] = {}
        assignment = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > low:
                ends[partition] = high
                assignment.append(TopicPartition(topic, partition, max(low, high - TAIL)))
        if not assignment:
            return []
        consumer.assign(assignment)
        found: list[NotifyDelivery] = []
        deadline = time.monotonic() + timeout_s
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(200, 0.2):
                if message.error() is not None:
                    continue
                if message.offset() >= ends.get(message.partition(), 0) - 1:
                    ends.pop(message.partition(), None)
                try:
                    found.append(NotifyDelivery.model_validate_json(message.value() or b""))
                except ValidationError:
                    continue
        found.sort(key=lambda delivery: delivery.at, reverse=True)
        return found[:limit]
    finally:
        consumer.close()
