"""The targets on their compacted topic: key = the target's name (UTF-8), value = its
`NotifyTarget` as JSON, tombstone = removed. The reading and writing are service/compacted.py's, as
for the watch list and the cameras; this adds the record format and the topic's name."""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from stream_worker.contracts.notify import (
    NotifyTarget,
    NotifyTargetError,
    parse_target,
    target_name_problem,
)
from stream_worker.service.compacted import (
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopicError,
    read_compacted,
    write_compacted,
)

DEFAULT_TOPIC = "notify-targets"

TargetsSnapshot = CompactedSnapshot[str, NotifyTarget]
TargetsStoreError = CompactedTopicError


class TargetRecordError(ValueError):
    """A `notify-targets` record (key or value) that is not a target or a removal."""


def validate_name(name: str) -> str:
    problem = target_name_problem(name)
    if problem is not None:
        raise ValueError(f"target name {problem}")
    return name


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, NotifyTarget | None]:
    """(name, target) of a record; target None for a tombstone. TargetRecordError says why not."""
    if key is None:
        raise TargetRecordError("record has no key (the key must be the target's name)")
    try:
        name = key.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TargetRecordError(f"key {key!r} is not UTF-8") from error
    problem = target_name_problem(name)
    if problem is not None:
        raise TargetRecordError(f"key: target name {problem}")
    if value is None:
        return name, None
    try:
        data = orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise TargetRecordError(f"target {name!r} is not JSON: {error}") from error
    try:
        return name, parse_target(data, f"target {name!r}")
    except NotifyTargetError as error:
        raise TargetRecordError(str(error)) from error


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
