"""Committing consumed offsets, checked partition by partition.

A service's bookkeeping (worker/offsets.py, sightings/engine.py) says which positions may be
committed; `Committer` commits those of owned partitions synchronously and marks committed only
what the broker accepted. A synchronous commit can fail whole (`KafkaException`, e.g. a
rebalance in progress) or for single partitions (an `.error` in its answer). A failed
partition's position stays committable and a later turn commits it: marked committed, it would
never be offered again (a stop would leave the broker's position behind, to be replayed), and the
worker would release the in-flight slots its bounded duplicates rely on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics

log = logging.getLogger(__name__)

K = TypeVar("K")  # how the service's bookkeeping names a partition


class CommitBook(Protocol[K]):
    def committable(self) -> Mapping[K, int]: ...
    def mark_committed(self, positions: dict[K, int]) -> None: ...


class CommitTarget(Protocol):
    def owns(self, partition: Partition) -> bool: ...
    def commit(self, positions: Mapping[Partition, int]) -> list[TopicPartition]: ...


class Committer(Generic[K]):
    """What may be committed -> commit -> check each partition -> mark -> count."""

    def __init__(
        self,
        consumer: CommitTarget,
        book: CommitBook[K],
        metrics: ServiceMetrics,
        partition_of: Callable[[K], Partition],
    ) -> None:
        self._consumer = consumer
        self._book = book
        self._metrics = metrics
        self._partition_of = partition_of

    def commit(self) -> dict[K, int]:
        """Commit what is committable in owned partitions; returns the positions the broker
        accepted (now marked committed). A failure is logged and counted, never raised."""
        wanted = {
            self._partition_of(key): (key, position)
            for key, position in self._book.committable().items()
            if self._consumer.owns(self._partition_of(key))
        }
        if not wanted:
            return {}
        try:
            answer = self._consumer.commit({p: position for p, (_, position) in wanted.items()})
        except KafkaException as error:
            log.warning(
                "commit failed",
                extra={"error": str(error), "positions": {_name(p): pos for p, (_, pos) in wanted.items()}},
            )
            for partition in wanted:
                self._metrics.commit_failures.labels(partition[0]).inc()
            return {}
        failed = {(tp.topic, tp.partition): tp.error for tp in answer if tp.error is not None}
        for partition, error in failed.items():
            if partition in wanted:
                self._failed(partition, wanted[partition][1], error)
        accepted = {key: position for p, (key, position) in wanted.items() if p not in failed}
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
