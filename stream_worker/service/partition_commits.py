"""Which plates offsets may be committed: at-least-once for sightings, with no state store.

A read held by an open group (or by a closed one whose sighting the broker has not acknowledged)
is not yet in any published sighting, so the commit position of a partition never passes the
first such read: a restart reads the partition again from there and rebuilds the open groups.

A restart also rebuilds what it needs from before the commit: groups that were closed and
published but straddle the position (a camera's pass that began before another camera's open
group) must be rebuilt from their first read, or their tail would become a sighting of its own
with another id. So the service replays from a little earlier (the `replay_from` of the app's
consumer) with the committed position as a *floor*: every read below it is already in a published
sighting, so a group made only of such reads is rebuilt silently, and a group that has reads at
or above it is published (again, with the same id when it is the same group).
"""

from __future__ import annotations

from collections import Counter


class PartitionCommits:
    """The commit bookkeeping of one partition of the plates topic."""

    def __init__(self, floor: int | None) -> None:
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
        """True for an offset below the floor: already part of a published sighting."""
        return self.floor is not None and offset < self.floor

    def hold(self, offset: int) -> None:
        """A group that is not yet published has a read at `offset`."""
        self._holds[offset] += 1

    def release(self, offset: int) -> None:
        if self._holds[offset] <= 0:
            raise ValueError(f"offset {offset} is not held")
        self._holds[offset] -= 1
        if not self._holds[offset]:
            del self._holds[offset]

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
