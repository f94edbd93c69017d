"""Publish in offset order per partition, whatever order the batches finish in.

Input is partitioned by camera id, so publishing each partition's outcomes in offset order keeps
every camera's events in capture order even though batches run concurrently on Triton.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

from stream_worker.worker.offsets import Partition

T = TypeVar("T")
_UNRESOLVED = object()


class InOrderRelease(Generic[T]):
    """Holds each partition's outcomes until all earlier offsets of that partition have one."""

    def __init__(self) -> None:
        self._queues: dict[Partition, deque[list]] = {}  # [offset, outcome] in expect order
        self._index: dict[Partition, dict[int, list]] = {}

    def expect(self, partition: Partition, offset: int) -> None:
        """Reserve the place of `offset` (call in consumption order)."""
        queue = self._queues.setdefault(partition, deque())
        index = self._index.setdefault(partition, {})
        if queue and offset <= queue[-1][0]:
            raise ValueError(f"offset {offset} of {partition} expected after {queue[-1][0]}")
        entry = [offset, _UNRESOLVED]
        queue.append(entry)
        index[offset] = entry

    def resolve(self, partition: Partition, offset: int, outcome: T) -> None:
        """Give `offset` its outcome; it is released once every earlier offset has one too."""
        entry = self._index.get(partition, {}).get(offset)
        if entry is None or entry[1] is not _UNRESOLVED:
            raise ValueError(f"offset {offset} of {partition} is not awaiting an outcome")
        entry[1] = outcome

    def release(self) -> list[tuple[Partition, int, T]]:
        """The outcomes now publishable, in offset order within each partition."""
        released = []
        for partition, queue in self._queues.items():
            index = self._index[partition]
            while queue and queue[0][1] is not _UNRESOLVED:
                offset, outcome = queue.popleft()
                del index[offset]
                released.append((partition, offset, outcome))
        return released

    def waiting(self, partition: Partition | None = None) -> int:
        if partition is not None:
            return len(self._queues.get(partition, ()))
        return sum(len(queue) for queue in self._queues.values())

    def forget(self, partitions: Iterable[Partition]) -> None:
        for partition in partitions:
            self._queues.pop(partition, None)
            self._index.pop(partition, None)
