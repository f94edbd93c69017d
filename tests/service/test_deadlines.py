"""The stop and revocation budgets (service/deadlines.Deadlines), on a hand-driven clock."""

from __future__ import annotations

import math

import pytest

from stream_worker.service.deadlines import CLOSE_RESERVE_S, Deadlines


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def deadlines(clock: Clock, shutdown_timeout_s: float = 30.0, revoke_timeout_s: float = 10.0) -> Deadlines:
    return Deadlines(shutdown_timeout_s, revoke_timeout_s, clock)


@pytest.mark.parametrize(
    ("shutdown_timeout_s", "reserve"),
    [(30.0, CLOSE_RESERVE_S), (15.0, CLOSE_RESERVE_S), (10.0, 2.0), (1.0, 0.2), (0.0, 0.0)],
)
def test_the_close_reserve_is_3_s_or_a_fifth_of_a_short_timeout(
    clock: Clock, shutdown_timeout_s: float, reserve: float
) -> None:
    assert deadlines(clock, shutdown_timeout_s).close_reserve_s == pytest.approx(reserve)


def test_a_second_stop_request_keeps_the_first_time(clock: Clock) -> None:
    budget = deadlines(clock)
    assert budget.stop_requested_at is None
    budget.request_stop()
    clock.now += 5
    budget.request_stop()
    assert budget.stop_requested_at == 1000.0


def test_drains_have_no_end_before_a_stop(clock: Clock) -> None:
    budget = deadlines(clock)
    assert budget.drain_end() == math.inf
    assert budget.drain_left() == math.inf
    assert budget.drain_left(clock.now + 4) == 4


def test_a_stop_ends_drains_the_close_reserve_before_the_timeout(clock: Clock) -> None:
    budget = deadlines(clock, shutdown_timeout_s=30)
    budget.request_stop()
    assert budget.drain_end() == 1000 + 30 - 3
    clock.now += 20
    assert budget.drain_left() == 7
    assert budget.drain_left(clock.now + 2) == 2  # an earlier end stays
    clock.now += 10
    assert budget.drain_left() == 0  # never negative


def test_a_revocation_gets_its_timeout_unless_a_stop_comes_during_it(clock: Clock) -> None:
    budget = deadlines(clock, shutdown_timeout_s=30, revoke_timeout_s=10)
    end = budget.revocation_end()
    assert end == 1010
    clock.now += 4
    assert budget.drain_left(end) == 6
    budget.request_stop()  # at 1004: the drain must end at 1004 + 27, later than the revocation's
    assert budget.drain_left(end) == 6

    short = deadlines(clock, shutdown_timeout_s=5, revoke_timeout_s=10)
    end = short.revocation_end()
    clock.now += 1
    short.request_stop()  # the stop's drain ends at 1005 + 5 - 1, before the revocation's 1014
    assert short.drain_left(end) == pytest.approx(4)


def test_the_shutdown_starts_at_the_stop_request(clock: Clock) -> None:
    budget = deadlines(clock, shutdown_timeout_s=30)
    budget.request_stop()
    clock.now += 2  # the loop finished its turn
    assert budget.begin_shutdown() == 1000
    assert budget.drain_left() == 25
    assert budget.final_flush_left() == pytest.approx(30 - 2 - 1.5)  # half the reserve kept
    clock.now += 5
    assert budget.shutdown_seconds() == 7
    clock.now += 100
    assert budget.final_flush_left() == 0


def test_a_shutdown_without_a_stop_request_starts_now_and_keeps_that_start(clock: Clock) -> None:
    budget = deadlines(clock, shutdown_timeout_s=30)  # a fatal error: no stop was requested
    assert budget.begin_shutdown() == 1000
    assert budget.drain_end() == 1027
    clock.now += 1
    budget.request_stop()  # a signal during the shutdown does not move its budget
    assert budget.begin_shutdown() == 1000
    assert budget.drain_end() == 1027
    assert budget.stop_requested_at == 1001
