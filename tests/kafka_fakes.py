"""Stand-ins for confluent-kafka's Consumer and Message in unit tests of the consumer wrappers
(importable because pytest's pythonpath has tests/): no broker, only what the wrappers call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

# What a commit answers: None (every partition accepted), the errors of some partitions, or an
# exception raised for the whole request.
CommitAnswer = dict[tuple[str, int], KafkaError] | KafkaException | None


class FakeMessage:
    def __init__(
        self, topic: str, partition: int, offset: int, error: KafkaError | None = None, value: bytes = b"x"
    ) -> None:
        self._topic, self._partition, self._offset, self._error = topic, partition, offset, error
        self._value = value

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> KafkaError | None:
        return self._error

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list[tuple[str, bytes]] | None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return 0, -1  # TIMESTAMP_NOT_AVAILABLE


@dataclass(frozen=True)
class CommittedPartition:
    """One partition of a synchronous commit's answer (TopicPartition's `error` is read-only)."""

    topic: str
    partition: int
    offset: int
    error: KafkaError | None = None


class FakeConsumer:
    """Answers each consume() with the next prepared batch; records seeks (refuses the first
    `refuse_seeks`), assignments, pauses and resumes, and answers committed() with `committed`.
    Commits are recorded and answered with the next of `commit_answers` (then accepted).
    `subscribe` keeps the rebalance callbacks, for a test to call as librdkafka would."""

    def __init__(
        self,
        batches: list[list[FakeMessage]] | None = None,
        refuse_seeks: int = 0,
        committed: dict[int, int] | None = None,
        commit_answers: list[CommitAnswer] | None = None,
    ) -> None:
        self.batches = list(batches or [])
        self.refuse_seeks = refuse_seeks
        self.committed_offsets = committed or {}
        self.commit_answers = list(commit_answers or [])
        self.seeks: list[tuple[str, int, int]] = []
        self.assigned: list[tuple[str, int, int]] = []
        self.paused: list[tuple[str, int]] = []
        self.resumed: list[tuple[str, int]] = []
        self.commits: list[dict[tuple[str, int], int]] = []
        self.calls: list[str] = []
        self.config: dict[str, Any] = {}
        self.topics: list[str] = []
        self.callbacks: dict[str, Callable[..., None]] = {}
        self.closed = False
        self.refuse_resume = False

    def __call__(self, config: dict[str, Any]) -> FakeConsumer:
        """Stands for the Consumer class: the wrappers construct their client with their config."""
        self.config = config
        return self

    def subscribe(self, topics: list[str], **callbacks: Callable[..., None]) -> None:
        self.topics = list(topics)
        self.callbacks = callbacks

    def rebalance(self, event: str, topic: str, partitions: list[int]) -> None:
        """Run the `on_assign`, `on_revoke` or `on_lost` callback as librdkafka would."""
        self.callbacks[event](self, [TopicPartition(topic, p) for p in partitions])

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused.extend((p.topic, p.partition) for p in partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        if self.refuse_resume:
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.resumed.extend((p.topic, p.partition) for p in partitions)

    def commit(self, offsets: list[TopicPartition], asynchronous: bool = True) -> list[CommittedPartition]:
        assert not asynchronous, "the services commit synchronously"
        self.commits.append({(p.topic, p.partition): p.offset for p in offsets})
        answer = self.commit_answers.pop(0) if self.commit_answers else None
        if isinstance(answer, KafkaException):
            raise answer
        errors = answer or {}
        return [
            CommittedPartition(p.topic, p.partition, p.offset, errors.get((p.topic, p.partition)))
            for p in offsets
        ]

    def consume(self, num_messages: int, timeout: float) -> list[FakeMessage]:
        self.calls.append("consume")
        return self.batches.pop(0) if self.batches else []

    def seek(self, partition: TopicPartition) -> None:
        self.calls.append("seek")
        if self.refuse_seeks:
            self.refuse_seeks -= 1
            raise KafkaException(KafkaError(KafkaError._STATE))
        self.seeks.append((partition.topic, partition.partition, partition.offset))

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [
            TopicPartition(p.topic, p.partition, self.committed_offsets.get(p.partition, -1001))
            for p in partitions
        ]

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.extend((p.topic, p.partition, p.offset) for p in partitions)

    def close(self) -> None:
        self.closed = True
