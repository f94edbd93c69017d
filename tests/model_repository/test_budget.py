"""plate_recognition/1/budget.py: the decoded-memory budget and the waves a request is decoded in."""

from __future__ import annotations

import asyncio

import pytest


def test_one_wave_when_everything_fits(budget) -> None:
    assert budget.waves([10, 20, 30], 60) == [[0, 1, 2]]


def test_waves_are_consecutive_and_each_fits(budget) -> None:
    costs = [40, 30, 30, 60, 1, 59, 60]
    result = budget.waves(costs, 60)
    assert result == [[0], [1, 2], [3], [4, 5], [6]]
    assert all(sum(costs[i] for i in wave) <= 60 for wave in result)


def test_no_costs_no_waves(budget) -> None:
    assert budget.waves([], 10) == []


def test_a_cost_over_the_capacity_is_refused(budget) -> None:
    with pytest.raises(ValueError, match="exceeds"):
        budget.waves([5, 11], 10)


def test_holders_beyond_the_capacity_wait_for_a_release(budget) -> None:
    async def scenario() -> list[str]:
        memory = budget.MemoryBudget(100)
        events: list[str] = []

        async def holder(name: str, amount: int, seconds: float) -> None:
            async with memory.hold(amount):
                events.append(f"{name} in ({memory.available} left)")
                await asyncio.sleep(seconds)
            events.append(f"{name} out")

        await asyncio.gather(holder("a", 70, 0.05), holder("b", 50, 0.0), holder("c", 30, 0.0))
        assert memory.available == 100
        return events

    events = asyncio.run(scenario())
    assert events[0] == "a in (30 left)"
    assert events.index("b in (50 left)") > events.index("a out")
    assert "c in (0 left)" in events


def test_an_amount_over_the_capacity_cannot_be_held(budget) -> None:
    async def scenario() -> None:
        async with budget.MemoryBudget(10).hold(11):
            pass

    with pytest.raises(ValueError, match="cannot hold 11"):
        asyncio.run(scenario())


def test_the_budget_is_released_when_the_holder_fails(budget) -> None:
    async def scenario() -> int:
        memory = budget.MemoryBudget(10)
        with pytest.raises(RuntimeError):
            async with memory.hold(10):
                raise RuntimeError("decode failed")
        return memory.available

    assert asyncio.run(scenario()) == 10
