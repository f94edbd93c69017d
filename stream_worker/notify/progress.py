"""Which alerts-topic offsets may be committed: an alert's offset only once every delivery it made is
settled (the target took it, refused it for good and it is in the DLQ, or the target is gone).

Offsets arrive in order per partition (the group consumer heals gaps), so a partition's position
is its oldest offset with unsettled deliveries, or the one after the last consumed when none is.
This is the `CommitBook` that service/commits.py's Committer commits from.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _Partition:
    unsettled: dict[int, int] = field(default_factory=dict)  # offset -> deliveries left, oldest first
    next_offset: int | None = None  # after the last offset consumed
    committed: int | None = None


class Progress:
    def __init__(self) -> None:
        self._partitions: dict[int, _Partition] = {}

    def assign(self, partition: int) -> None:
        self._partitions[partition] = _Partition()

    def revoke(self, partition: int) -> int:
        """Forget the partition; returns its unsettled deliveries (their outcomes are ignored)."""
        book = self._partitions.pop(partition, None)
        return 0 if book is None else sum(book.unsettled.values())

    def assigned(self) -> list[int]:
        return sorted(self._partitions)

    def add(self, partition: int, offset: int, deliveries: int) -> None:
        """A consumed alert and how many deliveries it made (0: settled already)."""
        book = self._partitions.get(partition)
        if book is None:
            return
        if deliveries > 0:
            book.unsettled[offset] = deliveries
        book.next_offset = offset + 1

    def settle(self, partition: int, offset: int) -> None:
        book = self._partitions.get(partition)
        if book is None or offset not in book.unsettled:
            return
        book.unsettled[offset] -= 1
        if book.unsettled[offset] <= 0:
            del book.unsettled[offset]

    def pending(self) -> int:
        return sum(sum(book.unsettled.values()) for book in self._partitions.values())

    def committable(self) -> dict[int, int]:
        positions = {}
        for partition, book in self._partitions.items():
            position = next(iter(book.unsettled), book.next_offset)
            if position is not None and position != book.committed:
                positions[partition] = position
        return positions

    def mark_committed(self, positions: dict[int, int]) -> None:
        for partition, position in positions.items():
            book = self._partitions.get(partition)
            if book is not None:
                book.committed = position
