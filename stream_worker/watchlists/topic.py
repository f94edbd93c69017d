"""The watch list on its compacted topic: key = the plate, value = its `WatchEntry`, tombstone =
taken off. `WATCHLIST` declares the topic for service/compacted.py, which reads, writes and
follows it; this adds the write of entries and removals in one go. A snapshot's `values` are the
entries by plate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stream_worker.contracts import topics
from stream_worker.contracts.watchlist import WatchEntry, decode_record, encode_entry, encode_removal
from stream_worker.service.compacted import (
    DEFAULT_PARTITIONS,
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopic,
    CompactedTopicError,
    SkippedRecord,
    ensure_compacted_topic,
)

DEFAULT_TOPIC = topics.WATCHLIST.name
WATCHLIST = CompactedTopic(DEFAULT_TOPIC, decode_record)

WatchlistSnapshot = CompactedSnapshot[str, WatchEntry]
WatchlistStoreError = CompactedTopicError
read_watchlist = WATCHLIST.read  # every entry, read to the topic's end; a missing topic is an empty list

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TOPIC",
    "WATCHLIST",
    "SkippedRecord",
    "WatchlistSnapshot",
    "WatchlistStoreError",
    "ensure_topic",
    "read_watchlist",
    "records",
    "write_changes",
]


def ensure_topic(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> bool:
    """Create the compacted topic unless it exists; True when this call created it."""
    return ensure_compacted_topic(bootstrap_servers, topic, config, partitions, timeout_s)


def records(entries: Sequence[WatchEntry], removals: Sequence[str]) -> list[tuple[bytes, bytes | None]]:
    """The records that put `entries` on the watch list and take the plates `removals` off."""
    return [encode_entry(entry) for entry in entries] + [encode_removal(plate) for plate in removals]


def write_changes(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    entries: Sequence[WatchEntry] = (),
    removals: Sequence[str] = (),
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int:
    """Put `entries` on the watch list and take the plates `removals` off, in one go; returns once
    every record is stored (how many), else raises WatchlistStoreError naming those that failed."""
    return WATCHLIST.write(bootstrap_servers, records(entries, removals), topic, config, timeout_s).count
