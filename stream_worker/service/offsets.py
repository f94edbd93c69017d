"""The offset book: which consumed offsets every consuming service may commit, per partition.

A service consumes a partition's records in offset order (the group consumer heals gaps) and
holds each offset whose output is not yet safe: a record whose output the broker has not
acknowledged, a delivery not yet settled, an open pass whose reads no published sighting holds
yet, a batch not yet written. A partition's commit position is its first held offset, else the
offset after the last one consumed; a commit never passes what is still held, which is what
at-least-once asks. Partitions are named one way, `(topic, partition)`, as librdkafka and
`Committer` (service/commits.py) name them.

A partition can start from a *floor*: the committed position found at assignment. A service that
replays from before it (sightings, alerts) rebuilds what straddles the position from reads that
are already in a published output; `is_replay` tells those reads apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from stream_worker.service.kafka import Partition


class PartitionOffsets:
    """The offsets of one partition under one assignment (a later assignment gets a new one)."""

    def __init__(self, floor: int | None = None) -> None:
        self.floor = floor  # the committed position found at assignment (None: none)
        self.committed = floor
        self._next: int | None = None  # the offset after the last one consumed
        self._holds: Counter[int] = Counter()

    def consumed(self, offset: int) -> None:
        if self._next is not None and offset < self._next:
            raise ValueError(f"offset {offset} consumed after {self._next - 1}")
        self._next = offset + 1

    @property
    def next_offset(self) -> int | None:
        """The offset after the last one consumed (None: nothing consumed yet)."""
        return self._next

    def is_replay(self, offset: int) -> bool:
        """True for an offset below the floor: already part of a published output."""
        return self.floor is not None and offset < self.floor

    def hold(self, offset: int, count: int = 1) -> None:
        """`count` more outputs of `offset` are not yet safe."""
        if count > 0:
            self._holds[offset] += count

    def release(self, offset: int) -> None:
        if self._holds[offset] <= 0:
            raise ValueError(f"offset {offset} is not held")
        self._holds[offset] -= 1
        if not self._holds[offset]:
            del self._holds[offset]

    def is_held(self, offset: int) -> bool:
        return self._holds[offset] > 0

    def position(self) -> int | None:
        """The first offset still held, else the next one to consume (None: nothing consumed)."""
        if self._holds:
            return min(self._holds)
        return self._next

    def committable(self) -> int | None:
        """The position to commit, when it moved beyond the committed one."""
        position = self.position()
        if position is None or (self.committed is not None and position <= self.committed):
            return None
        return position

    def mark_committed(self, position: int) -> None:
        if self.committed is None or position > self.committed:
            self.committed = position

    @property
    def held(self) -> int:
        return sum(self._holds.values())


class OffsetBook:
    """The `PartitionOffsets` of every assigned partition: the `CommitBook` a `Committer` commits from.

    Outcomes that come after their partition was revoked (a late delivery report) are ignored:
    whoever owns the partition now reads those records again.
    """

    def __init__(self) -> None:
        self._partitions: dict[Partition, PartitionOffsets] = {}

    def assign(self, partition: Partition, floor: int | None = None) -> PartitionOffsets:
        offsets = self._partitions[partition] = PartitionOffsets(floor)
        return offsets

    def forget(self, partition: Partition) -> int:
        """Drop a partition; returns how many holds it still had (their outputs are not waited for)."""
        offsets = self._partitions.pop(partition, None)
        return 0 if offsets is None else offsets.held

    def get(self, partition: Partition) -> PartitionOffsets | None:
        return self._partitions.get(partition)

    def assigned(self) -> list[Partition]:
        return sorted(self._partitions)

    def owns(self, partition: Partition) -> bool:
        return partition in self._partitions

    def consumed(self, partition: Partition, offset: int, holds: int = 0) -> None:
        """A record consumed, with `holds` outputs of it not yet safe; the record of a partition not
        assigned is skipped (it was fetched before the revocation)."""
        if (offsets := self._partitions.get(partition)) is not None:
            offsets.consumed(offset)
            offsets.hold(offset, holds)

    def hold(self, partition: Partition, offset: int) -> None:
        """One more output of a consumed `offset` is not yet safe."""
        if (offsets := self._partitions.get(partition)) is not None:
            offsets.hold(offset)

    def release(self, partition: Partition, offset: int) -> None:
        """One output of `offset` is safe; one of an earlier assignment is ignored."""
        offsets = self._partitions.get(partition)
        if offsets is not None and offsets.is_held(offset):
            offsets.release(offset)

    def held(self) -> int:
        return sum(offsets.held for offsets in self._partitions.values())

    def committable(self) -> dict[Partition, int]:
        return {
            partition: position
            for partition, offsets in self._partitions.items()
            if (position := offsets.committable()) is not None
        }

    def mark_committed(self, positions: Mapping[Partition, int]) -> None:
        for partition, position in positions.items():
            if (offsets := self._partitions.get(partition)) is not None:
                offsets.mark_committed(position)


class TopicBook:
    """The commit book of an engine that reads one topic, its partitions named by number. The
    sightings and alerts engines subclass it: a `Committer` commits from the engine itself, and
    each engine keeps only what it holds and releases."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._book = OffsetBook()

    def assigned(self) -> list[int]:
        return [partition for _, partition in self._book.assigned()]

    def committable(self) -> dict[Partition, int]:
        return self._book.committable()

    def mark_committed(self, positions: Mapping[Partition, int]) -> None:
        self._book.mark_committed(positions)

    def held(self) -> int:
        """Outputs holding back the commit position (not yet safe)."""
        return self._book.held()

    def _start(self, partition: int, floor: int | None = None) -> PartitionOffsets:
        return self._book.assign((self.topic, partition), floor)

    def _stop(self, partition: int) -> int:
        """Forget a partition; returns how many holds it still had."""
        return self._book.forget((self.topic, partition))

    def _find(self, partition: int) -> PartitionOffsets | None:
        return self._book.get((self.topic, partition))

    def _offsets(self, partition: int) -> PartitionOffsets:
        """The partition's offsets; KeyError when it is not assigned."""
        offsets = self._find(partition)
        if offsets is None:
            raise KeyError(partition)
        return offsets

    def _is_current(self, partition: int, offsets: PartitionOffsets) -> bool:
        """True while `partition` is still under the assignment `offsets` belong to."""
        return self._find(partition) is offsets
