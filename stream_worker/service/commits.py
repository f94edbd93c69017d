"""Committing consumed offsets, checked partition by partition.

A service's offset book (service/offsets.py; the worker's worker/offsets.py) says which positions
may be committed; `Committer` commits those of owned partitions synchronously and marks committed only
what the broker accepted. A synchronous commit can fail whole (`KafkaException`, e.g. a
rebalance in progress) or for single partitions (an `.error` in its answer). A failed
partition's position stays committable and a later turn commits it: marked committed, it would
never be offered again (a stop would leave the broker's position behind, to be replayed), and the
worker would release the in-flight slots its bounded duplicates rely on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics

log = logging.getLogger(__name__)


class CommitBook(Protocol):
    def committable(self) -> Mapping[Partition, int]: ...
    def mark_committed(self, positions: dict[Partition, int]) -> None: ...


class CommitTarget(Protocol):
    def owns(self, partition: Partition) -> bool: ...
    def commit(self, positions: Mapping[Partition, int]) -> list[TopicPartition]: ...


class Committer:
    """What may be committed -> commit -> check each partition -> mark -> count."""

    def __init__(self, consumer: CommitTarget, book: CommitBook, metrics: ServiceMetrics) -> None:
        self._consumer = consumer
        self._book = book
        self._metrics = metrics

    def commit(self) -> dict[Partition, int]:
        """Commit what is committable in owned partitions; returns the positions the broker
        accepted (now marked committed). A failure is logged and counted, never raised."""
        wanted = {
            partition: position
            for partition, position in self._book.committable().items()
            if self._consumer.owns(partition)
        }
        if not wanted:
            return {}
        try:
            answer = self._consumer.commit(wanted)
        except KafkaException as error:
            log.warning(
                "commit failed",
                extra={"error": str(error), "positions": {_name(p): pos for p, pos in wanted.items()}},
            )
            for partition in wanted:
                self._metrics.commit_failures.labels(partition[0]).inc()
            return {}
        failed = {(tp.topic, tp.partition): tp.error for tp in answer if tp.error is not None}
        for partition, error in failed.items():
            if partition in wanted:
                self._failed(partition, wanted[partition], error)
        accepted = {p: position for p, position in wanted.items() if p not in failed}
        if accepted:
            self._book.mark_committed(accepted)
            self._metrics.commits.inc()
        return accepted

    def _failed(self, partition: Partition, position: int, error: KafkaError) -> None:
        log.warning(
            "partition commit failed",
            extra={
                "topic": partition[0],
                "partition": partition[1],
                "offset": position,
                "error": error.str(),
            },
        )
        self._metrics.commit_failures.labels(partition[0]).inc()


def _name(partition: Partition) -> str:
    return f"{partition[0]}:{partition[1]}"
