"""Read a topic from the side, without joining or moving any consumer group's offsets.

The consumer assigns itself every partition (its group id is throwaway and nothing is committed),
so tailing the output or the dead-letter topic never disturbs the workers.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, Message, TopicPartition

log = logging.getLogger(__name__)

JsonRecord = dict[str, Any]


class TopicNotFoundError(LookupError):
    """The topic to tail does not exist on the broker."""


def tail_records(
    *,
    bootstrap_servers: str,
    topic: str,
    from_beginning: bool = False,
    max_messages: int | None = None,
    idle_timeout_s: float | None = None,
    config: Mapping[str, str] | None = None,
) -> Iterator[JsonRecord]:
    """Yield the topic's records as `describe_record` dicts; stop after `max_messages`, or once
    nothing new arrived for `idle_timeout_s` (None: run until the caller stops iterating)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"stream-worker-tail-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **(config or {}),
        }
    )
    try:
        _assign_all_partitions(consumer, topic, OFFSET_BEGINNING if from_beginning else OFFSET_END)
        count = 0
        last_activity = time.monotonic()
        while max_messages is None or count < max_messages:
            wait_s = 0.5
            if idle_timeout_s is not None:
                wait_s = min(wait_s, last_activity + idle_timeout_s - time.monotonic())
                if wait_s <= 0:
                    return
            message = consumer.poll(wait_s)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().fatal():
                    raise KafkaException(message.error())
                log.warning("consumer error on %s: %s", topic, message.error().str())
                continue
            last_activity = time.monotonic()
            count += 1
            yield describe_record(message)
    finally:
        consumer.close()


def _assign_all_partitions(consumer: Consumer, topic: str, offset: int) -> None:
    metadata = consumer.list_topics(topic, timeout=30.0).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        reason = (
            metadata.error.str() if metadata is not None and metadata.error is not None else "no partitions"
        )
        raise TopicNotFoundError(f"topic {topic!r} not found on the broker ({reason})")
    consumer.assign([TopicPartition(topic, partition, offset) for partition in sorted(metadata.partitions)])


def describe_record(message: Message) -> JsonRecord:
    """A JSON value as it is (a `PlateEvent`, say); any other record (a frame, a dead letter) as
    its coordinates, key, decoded headers and payload size, never the payload itself."""
    value = message.value() or b""
    try:
        return {"value": orjson.loads(value), **_coordinates(message)}
    except orjson.JSONDecodeError:
        pass
    return {
        **_coordinates(message),
        "headers": {name: _text(raw) for name, raw in message.headers() or []},
        "payload_bytes": len(value),
    }


def _coordinates(message: Message) -> JsonRecord:
    return {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "key": _text(message.key()),
    }


def _text(raw: bytes | str | None) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    return raw.decode("utf-8", errors="backslashreplace")


def format_json(record: JsonRecord) -> str:
    """`--json` output: a JSON value alone (so `jq` sees the event), anything else as described."""
    return orjson.dumps(record.get("value", record)).decode()


def format_human(record: JsonRecord) -> str:
    where = f"{record['topic']}[{record['partition']}]@{record['offset']} key={record['key']}"
    if "value" not in record:
        headers = " ".join(f"{name}={value}" for name, value in record["headers"].items())
        return f"{where} {record['payload_bytes']} bytes {headers}".rstrip()
    value = record["value"]
    if isinstance(value, dict) and isinstance(value.get("plates"), list):
        plates = "; ".join(_plate_text(plate) for plate in value["plates"]) or "no plates"
        return f"{where} frame={value.get('frame_id')} {plates}"
    return f"{where} {orjson.dumps(value).decode()}"


def _plate_text(plate: Any) -> str:
    if not isinstance(plate, dict):
        return orjson.dumps(plate).decode()
    box = plate.get("box")
    corners = (
        ",".join(_number(box.get(c)) for c in ("x1", "y1", "x2", "y2")) if isinstance(box, dict) else box
    )
    return f"{plate.get('text')} ({plate.get('confidence')}) at {corners}"


def _number(value: Any) -> str:
    return f"{value:.0f}" if isinstance(value, int | float) else str(value)
