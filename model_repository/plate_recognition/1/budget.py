"""The decoded-memory budget of a `plate_recognition` instance: no Triton import (unit-tested directly).

Decoded frames dwarf their JPEGs (a 563 KB flat 6000x6000 JPEG decodes to 108 MB), so what a
request may decode at once is bounded by bytes, not by frames: the frames of a request are decoded
in waves whose declared decode sizes fit the budget, every wave holds its share of the budget (shared
by all requests of the instance) until its plates are cut out, and a frame larger than the whole
budget is refused before decoding.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager


class MemoryBudget:
    """Bytes that may be held at once; `hold` waits until its amount is free."""

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"a memory budget must be positive, got {capacity}")
        self.capacity = capacity
        self.available = capacity
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, amount: int) -> AsyncIterator[None]:
        if not 0 <= amount <= self.capacity:
            raise ValueError(f"cannot hold {amount} bytes of a {self.capacity}-byte budget")
        async with self._changed:
            await self._changed.wait_for(lambda: self.available >= amount)
            self.available -= amount
        try:
            yield
        finally:
            async with self._changed:
                self.available += amount
                self._changed.notify_all()


def waves(costs: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices of `costs` in order, grouped into consecutive waves whose costs sum to at most
    `capacity` (every cost must fit on its own): usually one wave for the whole request."""
    result: list[list[int]] = []
    total = capacity + 1
    for index, cost in enumerate(costs):
        if cost > capacity:
            raise ValueError(f"cost {cost} exceeds the capacity {capacity}")
        if total + cost > capacity:
            result.append([])
            total = 0
        result[-1].append(index)
        total += cost
    return result
