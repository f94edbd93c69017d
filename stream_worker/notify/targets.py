"""The targets on their compacted topic: key = the target's name (UTF-8), value = its
`NotifyTarget` as JSON, tombstone = removed. The reading and writing are service/compacted.py's, as
for the watch list and the cameras; the record format is
the contract's (contracts/notify.decode_record); this adds the topic's name."""

from __future__ import annotations

from collections.abc import Mapping

from stream_worker.contracts import topics
from stream_worker.contracts.notify import (
    NotifyTarget,
    decode_record,
    target_name_problem,
)
from stream_worker.service.compacted import (
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopicError,
    read_compacted,
    write_compacted,
)

DEFAULT_TOPIC = topics.NOTIFY_TARGETS.name

TargetsSnapshot = CompactedSnapshot[str, NotifyTarget]
TargetsStoreError = CompactedTopicError


def validate_name(name: str) -> str:
    problem = target_name_problem(name)
    if problem is not None:
        raise ValueError(f"target name {problem}")
    return name


def read_targets(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> TargetsSnapshot:
    """Every target, read to the topic's end; a missing topic has none."""
    return read_compacted(bootstrap_servers, topic, decode_record, config, timeout_s)


def write_target(
    bootstrap_servers: str,
    name: str,
    target: NotifyTarget,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Store the target (creating the compacted topic if needed); returns once stored."""
    write_compacted(
        bootstrap_servers, topic, [(validate_name(name).encode(), target.to_json())], config, timeout_s
    )


def remove_target(
    bootstrap_servers: str,
    name: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Write the target's tombstone."""
    write_compacted(bootstrap_servers, topic, [(validate_name(name).encode(), None)], config, timeout_s)
