"""Retention on the embedded broker: which stored record batches to delete.

Tansu 0.6 keeps a topic's `retention.ms` and `retention.bytes` but never applies them, and answers
DeleteRecords with a panic that stops the broker. Its `s3://` engine stores each record batch as
one object, `clusters/<cluster>/topics/<topic>/partitions/<partition>/records/<base offset>.batch`,
and takes a partition's log start offset from the first batch it lists: deleting the oldest batch
objects is what Kafka's segment deletion does. A consumer whose position falls below the new start
is served from the first batch left (the services' gap healing then accepts the gap).

So the local object store (objectstore.py) runs `expired` every few seconds over its index:
- a topic whose `cleanup.policy` is `compact` alone is never trimmed (its latest values count);
  `compact,delete` (a status rewritten every few seconds) is trimmed by its retention like a stream;
- a batch goes once it was stored longer than `retention.ms` ago (by its write time, as Kafka's
  `LogAppendTime`), and the oldest go while a partition holds more than `retention.bytes`;
- a partition's newest batch always stays (Kafka's active segment): Tansu takes the high
  watermark from it.
Topics without these settings keep everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

RECORDS = "records"
BATCH_SUFFIX = ".batch"


@dataclass(frozen=True, slots=True)
class Retention:
    retention_ms: int | None  # None or negative: no time bound
    retention_bytes: int | None  # per partition; None or negative: no size bound

    @property
    def bounded(self) -> bool:
        return (self.retention_ms or -1) >= 0 or (self.retention_bytes or -1) >= 0


@dataclass(frozen=True, slots=True)
class Batch:
    name: str  # the object's name in the store, "bucket/...batch"
    modified_ns: int
    size: int


def topic_retention(configs: Iterable[Mapping[str, object]]) -> Retention | None:
    """A topic's retention from its configs (Tansu's meta.json shape); None when never trimmed."""
    values = {str(item.get("name")): str(item.get("value")) for item in configs}
    policies = {policy.strip() for policy in values.get("cleanup.policy", "delete").strip("[]").split(",")}
    if "delete" not in policies:
        return None
    retention = Retention(_integer(values.get("retention.ms")), _integer(values.get("retention.bytes")))
    return retention if retention.bounded else None


def _integer(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_retentions(root: Path) -> dict[tuple[str, str], Retention]:
    """("<bucket>/clusters/<cluster>", topic) -> retention, for every topic that has one: Tansu
    writes each cluster's topics with their configs to <bucket>/clusters/<cluster>/meta.json."""
    retentions: dict[tuple[str, str], Retention] = {}
    for meta in root.glob("*/clusters/*/meta.json"):
        try:
            topics = orjson.loads(meta.read_bytes()).get("topics") or {}
        except (OSError, orjson.JSONDecodeError, AttributeError):
            continue  # replaced while read: the next pass reads it
        for name, entry in topics.items():
            configs = ((entry or {}).get("topic") or {}).get("configs") or []
            if (retention := topic_retention(configs)) is not None:
                retentions[(meta.parent.relative_to(root).as_posix(), name)] = retention
    return retentions


def partition_of(name: str) -> tuple[str, str, str] | None:
    """("<bucket>/clusters/<cluster>", topic, partition path) for a record batch's name, else None."""
    parts = name.split("/")
    # bucket/clusters/<cluster>/topics/<topic>/partitions/<partition>/records/<offset>.batch
    if (
        len(parts) != 9
        or parts[1] != "clusters"
        or parts[3] != "topics"
        or parts[7] != RECORDS
        or not parts[8].endswith(BATCH_SUFFIX)
    ):
        return None
    return "/".join(parts[:3]), parts[4], "/".join(parts[:7])


def partitions_prefix(cluster: str, topic: str) -> str:
    """What the names of a topic's objects start with (`cluster` as `read_retentions` gives it)."""
    return f"{cluster}/topics/{topic}/partitions/"


def expired(
    batches: Iterable[Batch], retentions: Mapping[tuple[str, str], Retention], now_ns: int
) -> list[str]:
    """The batches to delete. `batches` in name order: each partition's by base offset, oldest first."""
    by_partition: dict[str, tuple[Retention, list[Batch]]] = {}
    for batch in batches:
        where = partition_of(batch.name)
        if where is None or (retention := retentions.get(where[:2])) is None:
            continue
        by_partition.setdefault(where[2], (retention, []))[1].append(batch)
    doomed: list[str] = []
    for retention, partition in by_partition.values():
        doomed.extend(batch.name for batch in expired_in_partition(partition, retention, now_ns))
    return doomed


def expired_in_partition(batches: list[Batch], retention: Retention, now_ns: int) -> list[Batch]:
    newest = len(batches) - 1  # always stays
    keep_from = 0
    if retention.retention_ms is not None and retention.retention_ms >= 0:
        cutoff = now_ns - retention.retention_ms * 1_000_000
        keep_from = next(
            (index for index, batch in enumerate(batches) if batch.modified_ns >= cutoff), newest
        )
    if retention.retention_bytes is not None and retention.retention_bytes >= 0:
        kept = sum(batch.size for batch in batches[keep_from:])
        while kept > retention.retention_bytes and keep_from < newest:
            kept -= batches[keep_from].size
            keep_from += 1
    return batches[: max(0, min(keep_from, newest))]
