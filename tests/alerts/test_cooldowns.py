"""The capture-time memory that decides whether a camera's entry may alert again."""

from __future__ import annotations

import pytest

from stream_worker.alerts.cooldowns import Cooldowns

KEY = (0, "gate-1", "B840CK197")


def test_an_unknown_camera_and_entry_may_alert():
    assert Cooldowns(3.0, 10.0).allows(KEY, 100.0, 0)


@pytest.mark.parametrize(
    ("time", "allowed"),
    [(99.0, False), (100.0, False), (109.9, False), (110.0, True), (96.9, True), (97.0, False)],
)
def test_the_cooldown_runs_from_the_alerts_capture_time(time, allowed):
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    assert cooldowns.allows(KEY, time, 6) is allowed


def test_the_read_that_raised_the_alert_may_raise_it_again():
    """A replay after a restart rebuilds the alert, with its id."""
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    assert cooldowns.allows(KEY, 100.0, 5)


@pytest.mark.parametrize(("time", "resumed"), [(150.0, True), (153.0, True), (147.0, True), (153.1, False)])
def test_a_read_near_the_end_of_an_ended_pass_resumes_it(time, resumed):
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    cooldowns.ended(KEY, 100.0, 150.0)
    assert cooldowns.resumes(KEY, time, 99) == (100.0 if resumed else None)
    assert cooldowns.allows(KEY, time, 99)  # the cooldown is long over


def test_a_replay_of_the_alerted_read_resumes_nothing():
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    cooldowns.ended(KEY, 100.0, 101.0)
    assert cooldowns.resumes(KEY, 100.0, 5) is None
    assert cooldowns.resumes(KEY, 100.2, 6) == 100.0


def test_a_later_end_or_alert_wins_an_earlier_one_read_late_does_not():
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    cooldowns.alerted(KEY, 50.0, 1)  # an older alert read back from the history
    assert not cooldowns.allows(KEY, 105.0, 9)
    cooldowns.ended(KEY, 100.0, 120.0)
    cooldowns.ended(KEY, 55.0, 60.0)
    assert cooldowns.resumes(KEY, 122.0, 9) == 100.0
    assert cooldowns.resumes(KEY, 61.0, 9) is None


def test_cameras_and_entries_are_apart():
    cooldowns = Cooldowns(3.0, 10.0)
    cooldowns.alerted(KEY, 100.0, 5)
    assert cooldowns.allows((0, "gate-2", "B840CK197"), 101.0, 6)
    assert cooldowns.allows((0, "gate-1", "A123BC77"), 101.0, 6)
    assert cooldowns.allows((1, "gate-1", "B840CK197"), 101.0, 6)


def test_a_zero_cooldown_only_resumes():
    cooldowns = Cooldowns(3.0, 0.0)
    cooldowns.alerted(KEY, 100.0, 5)
    assert cooldowns.allows(KEY, 100.1, 6)
    cooldowns.ended(KEY, 100.0, 100.5)
    assert cooldowns.resumes(KEY, 101.0, 7) == 100.0


def test_the_least_recently_touched_pairs_are_forgotten_first():
    cooldowns = Cooldowns(3.0, 10.0, max_keys=2)
    first, second, third = ((0, f"gate-{k}", "B840CK197") for k in range(3))
    cooldowns.alerted(first, 100.0, 1)
    cooldowns.alerted(second, 100.0, 2)
    cooldowns.ended(first, 100.0, 101.0)  # touched again
    cooldowns.alerted(third, 100.0, 3)
    assert len(cooldowns) == 2
    assert cooldowns.allows(second, 101.0, 9)  # forgotten
    assert not cooldowns.allows(first, 101.0, 9)


@pytest.mark.parametrize(("gap_s", "cooldown_s", "max_keys"), [(0.0, 1.0, 1), (1.0, -1.0, 1), (1.0, 1.0, 0)])
def test_bad_rules_are_refused(gap_s, cooldown_s, max_keys):
    with pytest.raises(ValueError):
        Cooldowns(gap_s, cooldown_s, max_keys)
