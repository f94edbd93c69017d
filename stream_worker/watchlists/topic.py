"""The watch list on its compacted topic: read whole, write entries and removals (tombstones).
The reading and writing are service/compacted.py's, as for the cameras' settings; this adds the
record format (watchlist.py) and the topic's name. A snapshot's `values` are the entries by plate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stream_worker.contracts import topics
from stream_worker.contracts.watchlist import WatchEntry, decode_record, encode_entry, encode_removal
from stream_worker.service.compacted import (
    DEFAULT_PARTITIONS,
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopicError,
    SkippedRecord,
    ensure_compacted_topic,
    read_compacted,
    write_compacted,
)

DEFAULT_TOPIC = topics.WATCHLIST.name

WatchlistSnapshot = CompactedSnapshot[str, WatchEntry]
WatchlistStoreError = CompactedTopicError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TOPIC",
    "SkippedRecord",
    "WatchlistSnapshot",
    "WatchlistStoreError",
    "ensure_topic",
    "read_watchlist",
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


def read_watchlist(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> WatchlistSnapshot:
    """Every entry, read to the topic's end; a missing topic is an empty watch list."""
    return read_compacted(bootstrap_servers, topic, decode_record, config, timeout_s)


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
    records = [encode_entry(entry) for entry in entries] + [encode_removal(plate) for plate in removals]
    return write_compacted(bootstrap_servers, topic, records, config, timeout_s)
