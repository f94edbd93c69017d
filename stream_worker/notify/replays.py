"""Dead letters sent again: `stream-worker notify dlq replay [--target NAME] [--since T]`.

The command reads `notify.dlq` to its end (each record is the event, keyed by its event id, with its
target and kind in the headers), picks those of the target and since the time, each (target, event)
once, and publishes them on the plain topic `notify.replays`: key = the target, value = the event,
headers the kind and the event id. The notify service reads that topic in a group of its own
(app.py) and puts each on its target's lane with the same event id, past the rules and the cooldown
(the event was chosen for that target once); one that fails again is dead-lettered again. The dead
letters stay where they are, so a replay lost to a crash is replayed by running the command again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from stream_worker.contracts import topics
from stream_worker.service.compacted import (
    CompactedTopicError,
    client_config,
    side_consumer,
    topic_partitions,
)

REPLAYS_TOPIC = topics.NOTIFY_REPLAYS.name
TARGET_HEADER = "notify.target"
KIND_HEADER = "notify.kind"
EVENT_HEADER = "notify.event"
DRAIN_S = 0.5  # the local broker's end is its last batch's first offset: the rest comes right after


@dataclass(frozen=True, slots=True)
class DeadLetter:
    target: str
    kind: str
    event_id: str
    body: bytes
    at: datetime  # when it was dead-lettered (the record's timestamp)


def _header(headers: list[tuple[str, bytes | None]] | None, name: str) -> str:
    for key, value in headers or ():
        if key == name and value is not None:
            return value.decode("utf-8", "replace")
    return ""


def read_dead_letters(
    bootstrap_servers: str, topic: str, config: Mapping[str, object] | None, timeout_s: float
) -> list[DeadLetter]:
    """Every dead letter on `topic`, oldest first; none when the topic does not exist."""
    consumer = side_consumer(bootstrap_servers, config, "notify-dlq-replay")
    try:
        partitions = topic_partitions(consumer, topic, timeout_s) or []
        ends: dict[int, int] = {}
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > low:
                ends[partition] = high
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, partition, 0) for partition in ends])
        letters: list[DeadLetter] = []
        deadline = time.monotonic() + timeout_s
        drain_until: float | None = None
        while time.monotonic() < deadline and (ends or time.monotonic() < (drain_until or 0)):
            for message in consumer.consume(500, 0.2):
                if message.error() is not None:
                    continue
                if message.offset() >= ends.get(message.partition(), 0) - 1:
                    ends.pop(message.partition(), None)
                headers = message.headers()
                _kind, stamp = message.timestamp()
                letters.append(
                    DeadLetter(
                        _header(headers, TARGET_HEADER),
                        _header(headers, KIND_HEADER),
                        (message.key() or b"").decode("utf-8", "replace"),
                        message.value() or b"",
                        datetime.fromtimestamp(stamp / 1000, UTC),
                    )
                )
            if not ends and drain_until is None:
                drain_until = time.monotonic() + DRAIN_S
        if ends:
            raise CompactedTopicError(f"topic {topic!r} not read to its end within {timeout_s:.0f} s")
        return sorted(letters, key=lambda letter: letter.at)
    finally:
        consumer.close()


def choose(letters: list[DeadLetter], target: str | None, since: datetime | None) -> list[DeadLetter]:
    """Those of `target` (any: None) dead-lettered at or after `since`, each (target, event) once."""
    chosen: dict[tuple[str, str], DeadLetter] = {}
    for letter in letters:
        if not letter.target or not letter.event_id or not letter.kind:
            continue  # not a notify dead letter
        if (target is None or letter.target == target) and (since is None or letter.at >= since):
            chosen.setdefault((letter.target, letter.event_id), letter)
    return list(chosen.values())


def ensure_topic(
    bootstrap_servers: str, topic: str, config: Mapping[str, object] | None, timeout_s: float
) -> None:
    """Create the (plain, one partition) replays topic unless it exists."""
    admin = AdminClient(client_config(bootstrap_servers, config))
    if topic_partitions(admin, topic, timeout_s) is not None:
        return
    future = admin.create_topics([NewTopic(topic, num_partitions=1)], request_timeout=timeout_s)[topic]
    error = future.exception(timeout=timeout_s)
    if error is not None and not (
        isinstance(error, KafkaException) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    ):
        raise CompactedTopicError(f"could not create topic {topic!r}: {error}")


def publish_replays(
    bootstrap_servers: str,
    topic: str,
    letters: list[DeadLetter],
    config: Mapping[str, object] | None,
    timeout_s: float,
) -> None:
    """Each letter on the replays topic; returns once the broker has them all."""
    ensure_topic(bootstrap_servers, topic, config, timeout_s)
    producer = Producer({**client_config(bootstrap_servers, config), "acks": "all", "linger.ms": 5})
    failed: list[str] = []
    for letter in letters:
        producer.produce(
            topic,
            key=letter.target.encode(),
            value=letter.body,
            headers=[(KIND_HEADER, letter.kind.encode()), (EVENT_HEADER, letter.event_id.encode())],
            on_delivery=lambda error, _message: failed.append(str(error)) if error is not None else None,
        )
        producer.poll(0)
    if producer.flush(timeout_s) or failed:
        raise CompactedTopicError(f"the broker did not take every replay: {(failed or ['timed out'])[0]}")
