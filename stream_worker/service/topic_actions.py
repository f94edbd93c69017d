"""What the commands that manage a compacted settings topic (`watchlist`, `cameras`, `notify
targets`) share: their exit statuses, how they print, and how they read and write the topic (at
the `Connection` their options give, service/options.py). The commands take `out` and `err` so
that they run the same under a test's runner as in a terminal."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import orjson
from confluent_kafka import KafkaException
from pydantic import BaseModel

from stream_worker.service.compacted import (
    CompactedSnapshot,
    CompactedTopic,
    CompactedTopicError,
)
from stream_worker.service.options import Connection

OK, BROKER_FAILED, BAD_INPUT = 0, 1, 2

Echo = Callable[[str], None]

K = TypeVar("K")
V = TypeVar("V")


def read_settings_topic(
    connection: Connection, topic: CompactedTopic[K, V], when_missing: str, err: Echo
) -> CompactedSnapshot[K, V] | None:
    """The topic read to its end, what went wrong said on `err`: None when the broker failed (the
    command then exits BROKER_FAILED); a missing topic noted with `when_missing` (what that means
    for this store), each undecodable record warned of."""
    try:
        snapshot = topic.read(
            connection.bootstrap_servers, connection.topic, connection.config, connection.timeout_s
        )
    except (CompactedTopicError, KafkaException) as error:
        err(f"error: {error}")
        return None
    if not snapshot.topic_exists:
        err(f"note: topic {connection.topic!r} does not exist yet; {when_missing}")
    for skipped in snapshot.skipped:
        err(f"warning: skipped the record at {connection.topic} {skipped}")
    return snapshot


def write_settings_topic(
    connection: Connection,
    topic: CompactedTopic[K, V],
    records: Sequence[tuple[bytes, bytes | None]],
    err: Echo,
) -> int:
    """Store the records (None: tombstone) and wait until they are: OK, or BROKER_FAILED with what
    went wrong said on `err`."""
    try:
        topic.write(
            connection.bootstrap_servers, records, connection.topic, connection.config, connection.timeout_s
        )
    except (CompactedTopicError, KafkaException) as error:
        err(f"error: {error}")
        return BROKER_FAILED
    return OK


def remove_from_settings_topic(
    connection: Connection,
    topic: CompactedTopic[K, V],
    key: K,
    tombstones: Sequence[tuple[bytes, bytes | None]],
    *,
    when_missing: str,
    absent: str,
    removed: Callable[[V], str],
    out: Echo,
    err: Echo,
) -> int:
    """What every `remove` command does once its key is checked: write the key's `tombstones`,
    unless the topic holds nothing under it (`absent` said, nothing written); `removed(value)`
    says what went."""
    snapshot = read_settings_topic(connection, topic, when_missing, err)
    if snapshot is None:
        return BROKER_FAILED
    value = snapshot.values.get(key)
    if value is None:
        out(f"{absent}; nothing written")
        return OK
    status = write_settings_topic(connection, topic, tombstones, err)
    if status == OK:
        out(removed(value))
    return status


def settings_json(value: BaseModel) -> str:
    """A stored value as the indented JSON a command's `set --file` takes back."""
    return orjson.dumps(value.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()
