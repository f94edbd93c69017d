"""Stand-ins for confluent-kafka's Consumer and Message in unit tests of the consumer wrappers
(importable because pytest's pythonpath has tests/): no broker, only what the wrappers call."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, TopicPartition


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


class FakeConsumer:
    """Answers each consume() with the next prepared batch; records seeks (refuses the first
    `refuse_seeks`), assignments, and answers committed() with `committed`."""

    def __init__(
        self,
        batches: list[list[FakeMessage]] | None = None,
        refuse_seeks: int = 0,
        committed: dict[int, int] | None = None,
    ) -> None:
        self.batches = list(batches or [])
        self.refuse_seeks = refuse_seeks
        self.committed_offsets = committed or {}
        self.seeks: list[tuple[str, int, int]] = []
        self.assigned: list[tuple[str, int, int]] = []
        self.calls: list[str] = []

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
        pass
