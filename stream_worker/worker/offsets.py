"""Which consumed offsets may be committed: the at-least-once bookkeeping, per partition.

Frames finish out of order (batches run concurrently, records are acknowledged by the broker one
by one), but a Kafka commit says "everything before this offset is done". So an offset becomes
committable only when its own output (or dead-letter) record AND those of every earlier offset
of its partition are acknowledged; the commit position is then the offset after that prefix.
Offsets need not be contiguous (compaction, transaction markers): only tracked ones count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

Partition = tuple[str, int]  # (topic, partition)


class _PartitionOffsets:
    __slots__ = ("acked", "committed", "done_through", "last_tracked", "unacked", "waiting")

    def __init__(self) -> None:
        self.waiting: deque[int] = deque()  # tracked, in order, not yet part of the done prefix
        self.unacked: set[int] = set()
        self.acked: set[int] = set()  # acked but blocked behind an earlier unacked offset
        self.last_tracked: int | None = None
        self.done_through: int | None = None  # commit position: every tracked offset below is acked
        self.committed: int | None = None  # the last position handed to mark_committed


class OffsetTracker:
    """Tracks consumed offsets until acknowledged and says which positions are safe to commit.

    Strict on purpose: tracking an offset twice or out of order, or acknowledging one that is not
    waiting, raises `ValueError`; the caller's bugs surface instead of silently losing frames.
    """

    def __init__(self) -> None:
        self._partitions: dict[Partition, _PartitionOffsets] = {}

    def track(self, partition: Partition, offset: int) -> None:
        """Record that `offset` was consumed; offsets of a partition must be tracked in increasing order."""
        if offset < 0:
            raise ValueError(f"offset {offset} of {partition} is negative")
        state = self._partitions.setdefault(partition, _PartitionOffsets())
        if state.last_tracked is not None and offset <= state.last_tracked:
            raise ValueError(f"offset {offset} of {partition} tracked after {state.last_tracked}")
        state.last_tracked = offset
        state.waiting.append(offset)
        state.unacked.add(offset)

    def ack(self, partition: Partition, offset: int) -> None:
        """Record that the output (or dead-letter) record of `offset` is acknowledged by the broker."""
        state = self._partitions.get(partition)
        if state is None or offset not in state.unacked:
            raise ValueError(f"offset {offset} of {partition} is not waiting for an acknowledgement")
        state.unacked.remove(offset)
        state.acked.add(offset)
        while state.waiting and state.waiting[0] in state.acked:
            done = state.waiting.popleft()
            state.acked.remove(done)
            state.done_through = done + 1

    def committable(self) -> dict[Partition, int]:
        """Commit positions (next offset to read) that advanced beyond the last committed ones."""
        return {
            partition: state.done_through
            for partition, state in self._partitions.items()
            if state.done_through is not None
            and (state.committed is None or state.done_through > state.committed)
        }

    def mark_committed(self, positions: Mapping[Partition, int]) -> None:
        """Record positions the broker accepted; positions of forgotten partitions are ignored."""
        for partition, position in positions.items():
            state = self._partitions.get(partition)
            if state is None:
                continue
            if state.done_through is None or position > state.done_through:
                raise ValueError(
                    f"position {position} of {partition} committed beyond what is done ({state.done_through})"
                )
            if state.committed is None or position > state.committed:
                state.committed = position

    def last_tracked(self, partition: Partition) -> int | None:
        state = self._partitions.get(partition)
        return state.last_tracked if state else None

    def is_committed(self, partition: Partition, offset: int) -> bool:
        """True when `offset` lies below the committed position (or its partition is forgotten)."""
        state = self._partitions.get(partition)
        if state is None:
            return True
        return state.committed is not None and offset < state.committed

    def pending(self, partition: Partition | None = None) -> int:
        """Tracked offsets not yet in the done prefix (of one partition, or of all)."""
        if partition is not None:
            state = self._partitions.get(partition)
            return len(state.waiting) if state else 0
        return sum(len(state.waiting) for state in self._partitions.values())

    def forget(self, partitions: Iterable[Partition]) -> None:
        """Drop everything about partitions this worker no longer owns (revoked or lost)."""
        for partition in partitions:
            self._partitions.pop(partition, None)

    def partitions(self) -> list[Partition]:
        return list(self._partitions)
