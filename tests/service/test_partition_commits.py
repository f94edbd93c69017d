"""The commit position of a plates partition: never past a read that no published sighting holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.service.partition_commits import PartitionCommits


def test_nothing_consumed_nothing_to_commit():
    assert PartitionCommits(None).committable() is None
    assert PartitionCommits(7).committable() is None


def test_without_holds_the_position_follows_consumption():
    commits = PartitionCommits(None)
    for offset in range(3):
        commits.consumed(offset)
    assert commits.committable() == 3
    commits.mark_committed(3)
    assert commits.committable() is None


def test_a_held_read_stops_the_position_until_released():
    commits = PartitionCommits(None)
    commits.consumed(0)
    commits.consumed(1)
    commits.hold(1)
    commits.consumed(2)
    commits.hold(2)
    commits.consumed(3)
    assert commits.committable() == 1
    commits.release(2)
    assert commits.committable() == 1
    commits.release(1)
    assert commits.committable() == 4


def test_two_groups_may_hold_one_offset():
    commits = PartitionCommits(None)
    commits.consumed(5)
    commits.hold(5)
    commits.hold(5)
    commits.release(5)
    assert commits.position() == 5
    commits.release(5)
    assert commits.position() == 6
    with pytest.raises(ValueError):
        commits.release(5)


def test_a_replay_below_the_floor_never_commits_below_it():
    commits = PartitionCommits(10)
    assert commits.is_replay(9) and not commits.is_replay(10)
    for offset in range(4, 10):
        commits.consumed(offset)
        assert commits.committable() is None
    commits.consumed(10)
    assert commits.committable() == 11


def test_offsets_go_forward_only():
    commits = PartitionCommits(None)
    commits.consumed(3)
    with pytest.raises(ValueError):
        commits.consumed(2)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5)), max_size=60), st.integers(0, 10))
def test_the_position_never_passes_a_held_offset_nor_goes_back(steps, floor):
    """Consume offsets from `floor - 5`; some are held; each step may release the oldest hold."""
    commits = PartitionCommits(floor)
    held: list[int] = []
    committed = floor
    for offset, (hold, release) in enumerate(steps, start=max(0, floor - 5)):
        commits.consumed(offset)
        if hold and not commits.is_replay(offset):
            commits.hold(offset)
            held.append(offset)
        for _ in range(release % 3 if held else 0):
            commits.release(held.pop(0))
            if not held:
                break
        if (position := commits.committable()) is not None:
            assert position > committed
            assert not held or position <= min(held)
            commits.mark_committed(position)
            committed = position
        assert committed >= floor
