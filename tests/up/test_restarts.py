"""When a dead child is started again: at once, then after doubling delays up to the cap; a
child that stayed up long enough starts the count again; a failed start counts as a death."""

from __future__ import annotations

from stream_worker.up.restarts import RestartPolicy, Restarts

POLICY = RestartPolicy(first_delay_s=0.0, delay_s=1.0, max_delay_s=8.0, stable_s=60.0)


def test_delays_double_from_the_second_death_in_a_row_up_to_the_cap() -> None:
    assert [POLICY.delay(n) for n in range(1, 8)] == [0.0, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_deaths_in_a_row_back_off_and_a_stable_run_resets_them() -> None:
    restarts = Restarts(POLICY)
    restarts.started(0.0)
    assert restarts.died(1.0) == 0.0 and restarts.due(1.0)
    restarts.restarted(1.0)
    assert restarts.died(2.0) == 1.0
    assert not restarts.due(2.5) and restarts.due(3.0)
    restarts.restarted(3.0)
    assert restarts.died(4.0) == 2.0
    restarts.restarted(6.0)
    assert restarts.died(6.0 + 60.0) == 0.0  # up for a minute: healthy again
    assert restarts.count == 3


def test_a_start_that_fails_is_one_more_death_in_a_row_even_after_a_long_run() -> None:
    restarts = Restarts(POLICY)
    restarts.started(0.0)
    assert restarts.died(100.0) == 0.0
    assert restarts.died(100.0) == 1.0  # the restart failed at once
    assert restarts.died(101.0) == 2.0
    assert restarts.count == 0


def test_not_due_while_running() -> None:
    restarts = Restarts(POLICY)
    restarts.started(0.0)
    assert not restarts.due(1000.0)
