"""A bounded memory of the passes whose reads raised an alert: is a sighting's pass one of them?

A read pass is remembered as its alert is raised (before the broker acknowledged it: a sighting of
the same pass must not alert beside it while it is in flight), as the live `Span` the pass engine
keeps growing while the pass is open. It is forgotten once `max_age_s` (monotonic seconds) have
passed since it was remembered, or once `max_passes` newer ones were remembered, oldest first.
The memory is the process's own: it starts empty after a restart, and it only knows the plates
partitions this process read (sightings.py says what follows from that).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

PassKey = tuple[int, str, str]  # (plates partition, camera id, entry plate)


class Span(Protocol):
    """A pass's reads on its plates partition, first to last (inclusive); the last may grow."""

    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...


class RecentPasses:
    def __init__(self, max_passes: int, max_age_s: float) -> None:
        if max_passes < 1 or max_age_s <= 0:
            raise ValueError(f"max_passes must be >= 1 and max_age_s > 0, got {max_passes}, {max_age_s}")
        self.max_passes = max_passes
        self.max_age_s = max_age_s
        self._order: deque[tuple[float, PassKey, Span]] = deque()  # oldest first
        self._by_key: dict[PassKey, list[Span]] = {}

    def remember(self, key: PassKey, span: Span, now: float) -> None:
        self._order.append((now, key, span))
        self._by_key.setdefault(key, []).append(span)
        self._forget(now)

    def overlaps(self, key: PassKey, first_offset: int, last_offset: int, now: float) -> bool:
        """True when a remembered pass of `key` has a read in [first_offset, last_offset]."""
        self._forget(now)
        return any(
            span.first_offset <= last_offset and first_offset <= span.last_offset
            for span in self._by_key.get(key, ())
        )

    def _forget(self, now: float) -> None:
        while self._order and (
            len(self._order) > self.max_passes or now - self._order[0][0] > self.max_age_s
        ):
            _, key, span = self._order.popleft()
            spans = self._by_key[key]
            spans.remove(span)
            if not spans:
                del self._by_key[key]

    def __len__(self) -> int:
        return len(self._order)
