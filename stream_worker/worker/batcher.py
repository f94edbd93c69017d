"""Micro-batching: a batch closes when it holds `max_frames` or `max_wait_s` after its first frame.

Bigger batches use Triton better; the wait bound caps the latency a lone frame pays for that.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Batcher(Generic[T]):
    def __init__(
        self, max_frames: int, max_wait_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_frames < 1:
            raise ValueError(f"max_frames must be at least 1, got {max_frames}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must not be negative, got {max_wait_s}")
        self.max_frames = max_frames
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._items: list[T] = []
        self._opened_at = 0.0

    def add(self, item: T) -> list[T] | None:
        """Add one frame; returns the batch when this frame filled it."""
        if not self._items:
            self._opened_at = self._clock()
        self._items.append(item)
        if len(self._items) >= self.max_frames:
            return self.flush()
        return None

    def poll(self) -> list[T] | None:
        """The open batch if its wait is over, else None."""
        if self._items and self._clock() - self._opened_at >= self.max_wait_s:
            return self.flush()
        return None

    def flush(self) -> list[T] | None:
        """Close the open batch now (shutdown, rebalance); None when empty."""
        if not self._items:
            return None
        batch, self._items = self._items, []
        return batch

    def seconds_until_due(self) -> float | None:
        """How long until the open batch must close; None when there is none."""
        if not self._items:
            return None
        return max(0.0, self.max_wait_s - (self._clock() - self._opened_at))

    def __len__(self) -> int:
        return len(self._items)
