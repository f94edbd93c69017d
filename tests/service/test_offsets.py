"""The offset book (service/offsets.py): a partition's commit position never passes a held offset."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.service.offsets import OffsetBook, PartitionOffsets, TopicBook


def test_nothing_consumed_nothing_to_commit():
    assert PartitionOffsets(None).committable() is None
    assert PartitionOffsets(7).committable() is None


def test_without_holds_the_position_follows_consumption():
    commits = PartitionOffsets(None)
    for offset in range(3):
        commits.consumed(offset)
    assert commits.committable() == 3
    commits.mark_committed(3)
    assert commits.committable() is None


def test_a_held_read_stops_the_position_until_released():
    commits = PartitionOffsets(None)
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
    commits = PartitionOffsets(None)
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
    commits = PartitionOffsets(10)
    assert commits.is_replay(9) and not commits.is_replay(10)
    for offset in range(4, 10):
        commits.consumed(offset)
        assert commits.committable() is None
    commits.consumed(10)
    assert commits.committable() == 11


def test_offsets_go_forward_only():
    commits = PartitionOffsets(None)
    commits.consumed(3)
    with pytest.raises(ValueError):
        commits.consumed(2)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5)), max_size=60), st.integers(0, 10))
def test_the_position_never_passes_a_held_offset_nor_goes_back(steps, floor):
    """Consume offsets from `floor - 5`; some are held; each step may release the oldest hold."""
    commits = PartitionOffsets(floor)
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


P0, P1 = ("alerts", 0), ("alerts", 1)


def test_the_book_waits_for_every_output_of_the_oldest_held_offset() -> None:
    book = OffsetBook()
    book.assign(P0)
    assert book.committable() == {}
    book.consumed(P0, 10, holds=2)  # two outputs
    book.consumed(P0, 11)  # none
    book.consumed(P0, 12, holds=1)
    assert book.committable() == {P0: 10}
    book.release(P0, 12)
    book.release(P0, 10)
    assert book.committable() == {P0: 10}  # one of offset 10's two outputs is still out
    assert book.held() == 1
    book.release(P0, 10)
    assert book.committable() == {P0: 13}
    book.mark_committed({P0: 13})
    assert book.committable() == {}


def test_forgotten_partitions_are_dropped_and_late_outcomes_ignored() -> None:
    book = OffsetBook()
    book.assign(P0)
    book.assign(P1)
    book.consumed(P0, 5, holds=1)
    book.consumed(P1, 7, holds=3)
    assert book.forget(P1) == 3
    book.release(P1, 7)  # an outcome that comes after the revocation
    book.consumed(P1, 8)  # a record fetched before it
    book.release(P0, 4)  # never held
    assert book.committable() == {P0: 5}
    assert book.assigned() == [P0]


def test_a_topic_book_names_partitions_by_number_and_commits_its_own_topic() -> None:
    book = TopicBook("plates")
    first = book._start(1, floor=5)
    book._start(0)
    assert book.assigned() == [0, 1]
    first.consumed(5)
    first.hold(5)
    first.consumed(6)
    assert book.committable() == {}  # held at its floor, the committed position
    assert book.held() == 1
    first.release(5)
    assert book.committable() == {("plates", 1): 7}
    book.mark_committed({("plates", 1): 7})
    assert book.committable() == {}
    assert book._is_current(1, first)
    assert book._stop(1) == 0
    assert not book._is_current(1, first)
    with pytest.raises(KeyError):
        book._offsets(1)
    assert book.assigned() == [0]
