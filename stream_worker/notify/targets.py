"""The targets on their compacted topic: key = the target's name (UTF-8), value = its
`NotifyTarget` as JSON, tombstone = removed. `TARGETS` declares the topic (the record format is
the contract's, contracts/notify.decode_record; `STATUS` declares notify's own notify-status) for
service/compacted.py, which reads, writes and follows it; this adds the writes by name, each name
checked first."""

from __future__ import annotations

from collections.abc import Mapping

from stream_worker.contracts import topics
from stream_worker.contracts.notify import (
    NotifyTarget,
    decode_record,
    decode_status,
    target_name_problem,
)
from stream_worker.service.compacted import (
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopic,
    CompactedTopicError,
)

DEFAULT_TOPIC = topics.NOTIFY_TARGETS.name
TARGETS = CompactedTopic(DEFAULT_TOPIC, decode_record)
# What notify says of itself (the names of the target secrets it has), one record: STATUS_KEY.
STATUS = CompactedTopic(topics.NOTIFY_STATUS.name, decode_status)

TargetsSnapshot = CompactedSnapshot[str, NotifyTarget]
TargetsStoreError = CompactedTopicError
read_targets = TARGETS.read  # every target, read to the topic's end; a missing topic has none


def validate_name(name: str) -> str:
    problem = target_name_problem(name)
    if problem is not None:
        raise ValueError(f"target name {problem}")
    return name


def target_record(name: str, target: NotifyTarget | None) -> tuple[bytes, bytes | None]:
    """The record that stores the target `name` (None: its tombstone); ValueError for a bad name."""
    return validate_name(name).encode(), None if target is None else target.to_json()


def write_target(
    bootstrap_servers: str,
    name: str,
    target: NotifyTarget,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Store the target (creating the compacted topic if needed); returns once stored."""
    TARGETS.write(bootstrap_servers, [target_record(name, target)], topic, config, timeout_s)


def remove_target(
    bootstrap_servers: str,
    name: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Write the target's tombstone."""
    TARGETS.write(bootstrap_servers, [target_record(name, None)], topic, config, timeout_s)
