"""What the commands that manage a compacted settings topic (`watchlist`, `cameras`, `notify
targets`) share: their exit statuses, how they print, where they connect, and how they read the
topic. The commands take `out` and `err` so that they run the same under a test's runner as in a
terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from confluent_kafka import KafkaException

from stream_worker.service.compacted import DEFAULT_TIMEOUT_S, CompactedSnapshot, CompactedTopicError

OK, BROKER_FAILED, BAD_INPUT = 0, 1, 2

Echo = Callable[[str], None]

K = TypeVar("K")
V = TypeVar("V")
# A store's reader (read_cameras, read_watchlist, read_targets): servers, topic, config, timeout.
ReadTopic = Callable[[str, str, Mapping[str, str], float], CompactedSnapshot[K, V]]


@dataclass(frozen=True)
class Connection:
    """The broker, the settings topic and the client settings a command uses."""

    bootstrap_servers: str
    topic: str
    config: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S


def read_settings_topic(
    connection: Connection, read: ReadTopic[K, V], when_missing: str, err: Echo
) -> CompactedSnapshot[K, V] | None:
    """The topic read to its end, what went wrong said on `err`: None when the broker failed (the
    command then exits BROKER_FAILED); a missing topic noted with `when_missing` (what that means
    for this store), each undecodable record warned of."""
    try:
        snapshot = read(
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
