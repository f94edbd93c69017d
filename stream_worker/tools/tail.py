"""Read a topic from the side, without joining or moving any consumer group's offsets.

The reader assigns itself every partition (service/topic_reader.py: no group, nothing committed),
so tailing the output or the dead-letter topic never disturbs the workers.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Message

from stream_worker.service.topic_reader import TopicReader

JsonRecord = dict[str, Any]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def tail_records(
    *,
    bootstrap_servers: str,
    topic: str,
    from_beginning: bool = False,
    max_messages: int | None = None,
    idle_timeout_s: float | None = None,
    config: Mapping[str, str] | None = None,
) -> Iterator[JsonRecord]:
    """Yield the topic's records as `describe_record` dicts, in offset order per partition; stop
    after `max_messages`, or once nothing new arrived for `idle_timeout_s` (None: run until the
    caller stops iterating)."""
    reader = TopicReader(bootstrap_servers, [topic], from_beginning, config)
    try:
        count = 0
        last_activity = time.monotonic()
        while max_messages is None or count < max_messages:
            wait_s = 0.5
            if idle_timeout_s is not None:
                wait_s = min(wait_s, last_activity + idle_timeout_s - time.monotonic())
                if wait_s <= 0:
                    return
            for message in reader.poll(max_messages - count if max_messages else 500, wait_s):
                last_activity = time.monotonic()
                count += 1
                yield describe_record(message)
    finally:
        reader.close()


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


def plate_images(record: JsonRecord) -> list[tuple[str, bytes]]:
    """(file name, JPEG) of each plate picture in a record: a PlateEvent's plates as
    `{event_id}-{plate index}.jpg`, a PlateSighting's best read as `{sighting_id}.jpg`. Names are
    made safe for a file system (the ids come off a topic); pictures that are not base64 are skipped."""
    value = record.get("value")
    if not isinstance(value, dict):
        return []
    found: list[tuple[str, Any]] = []
    plates = value.get("plates")
    if isinstance(plates, list):
        found += [
            (f"{value.get('event_id')}-{i}", p.get("image"))
            for i, p in enumerate(plates)
            if isinstance(p, dict)
        ]
    best = value.get("best_read")
    if isinstance(best, dict):
        found.append((str(value.get("sighting_id")), best.get("image")))
    pictures = []
    for stem, image in found:
        if not isinstance(image, str) or not image:
            continue
        try:
            jpeg = base64.b64decode(image, validate=True)
        except (binascii.Error, ValueError):
            continue
        pictures.append((_UNSAFE.sub("_", stem).lstrip(".") + ".jpg", jpeg))
    return pictures


def save_plate_images(record: JsonRecord, directory: Path) -> list[Path]:
    """Write the record's plate pictures (`plate_images`) into `directory`; the files written."""
    written = []
    for name, jpeg in plate_images(record):
        path = directory / name
        path.write_bytes(jpeg)
        written.append(path)
    return written


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
