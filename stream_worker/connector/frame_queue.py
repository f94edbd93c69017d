"""A camera's bounded queue of frames waiting for the producer: live video cannot wait, so when
it is full the OLDEST frame goes (and is counted), never the camera's reader."""

from __future__ import annotations

import threading
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class DropOldestQueue(Generic[T]):
    """Thread-safe: one reader thread `put`s, the publishing loop `take`s."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        self.dropped = 0  # frames pushed out by newer ones
        self.put_count = 0

    def put(self, item: T) -> T | None:
        """Queue `item`; the oldest frame it pushed out (counted in `dropped`), or None."""
        with self._lock:
            self.put_count += 1
            dropped = None
            if len(self._items) >= self.capacity:
                dropped = self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            return dropped

    def take(self, limit: int) -> list[T]:
        """Up to `limit` frames, oldest first."""
        with self._lock:
            count = min(limit, len(self._items))
            return [self._items.popleft() for _ in range(count)]

    def __len__(self) -> int:
        return len(self._items)
