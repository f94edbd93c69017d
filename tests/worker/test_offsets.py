"""The offset-commit tracker: the piece that decides what is safe to commit (no loss on a crash)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from stream_worker.worker.offsets import OffsetTracker

P0 = ("frames", 0)
P1 = ("frames", 1)


def tracked(*offsets: int, partition=P0) -> OffsetTracker:
    tracker = OffsetTracker()
    for offset in offsets:
        tracker.track(partition, offset)
    return tracker


# --- example-based ----------------------------------------------------------------------------


def test_nothing_is_committable_before_any_ack():
    tracker = tracked(0, 1, 2)
    assert tracker.committable() == {}
    assert tracker.pending() == 3


def test_an_empty_tracker_has_nothing_to_commit():
    tracker = OffsetTracker()
    assert tracker.committable() == {}
    assert tracker.pending() == 0
    assert tracker.partitions() == []


def test_in_order_acks_advance_the_position_one_by_one():
    tracker = tracked(0, 1, 2)
    tracker.ack(P0, 0)
    assert tracker.committable() == {P0: 1}
    tracker.ack(P0, 1)
    assert tracker.committable() == {P0: 2}
    tracker.ack(P0, 2)
    assert tracker.committable() == {P0: 3}
    assert tracker.pending() == 0


def test_a_later_ack_waits_for_every_earlier_offset():
    tracker = tracked(0, 1, 2, 3)
    tracker.ack(P0, 3)
    tracker.ack(P0, 1)
    assert tracker.committable() == {}
    assert tracker.pending() == 4
    tracker.ack(P0, 0)
    assert tracker.committable() == {P0: 2}  # 2 is still missing, 3 waits behind it
    tracker.ack(P0, 2)
    assert tracker.committable() == {P0: 4}


def test_the_position_after_a_gap_is_the_offset_after_the_last_done_one():
    # Offsets 5 and 8 only (compaction / transaction markers in between).
    tracker = tracked(5, 8)
    tracker.ack(P0, 5)
    assert tracker.committable() == {P0: 6}
    tracker.ack(P0, 8)
    assert tracker.committable() == {P0: 9}


def test_partitions_are_independent():
    tracker = OffsetTracker()
    for offset in (0, 1):
        tracker.track(P0, offset)
        tracker.track(P1, offset)
    tracker.ack(P1, 0)
    tracker.ack(P0, 1)
    assert tracker.committable() == {P1: 1}
    assert tracker.pending(P0) == 2
    assert tracker.pending(P1) == 1
    assert tracker.pending() == 3


def test_a_committed_position_is_not_offered_again_until_it_advances():
    tracker = tracked(0, 1)
    tracker.ack(P0, 0)
    tracker.mark_committed({P0: 1})
    assert tracker.committable() == {}
    tracker.ack(P0, 1)
    assert tracker.committable() == {P0: 2}


def test_is_committed_follows_the_committed_position():
    tracker = tracked(0, 1, 2)
    tracker.ack(P0, 0)
    tracker.ack(P0, 1)
    assert not tracker.is_committed(P0, 0)  # done, but not committed yet
    tracker.mark_committed({P0: 2})
    assert tracker.is_committed(P0, 0)
    assert tracker.is_committed(P0, 1)
    assert not tracker.is_committed(P0, 2)


def test_an_older_commit_confirmation_does_not_move_the_position_back():
    tracker = tracked(0, 1)
    tracker.ack(P0, 0)
    tracker.ack(P0, 1)
    tracker.mark_committed({P0: 2})
    tracker.mark_committed({P0: 1})
    assert tracker.is_committed(P0, 1)
    assert tracker.committable() == {}


def test_committing_beyond_what_is_done_is_refused():
    tracker = tracked(0, 1)
    tracker.ack(P0, 0)
    with pytest.raises(ValueError, match="beyond what is done"):
        tracker.mark_committed({P0: 2})


def test_committing_a_partition_with_nothing_done_is_refused():
    tracker = tracked(0)
    with pytest.raises(ValueError, match="beyond what is done"):
        tracker.mark_committed({P0: 0})


def test_commit_confirmations_for_forgotten_partitions_are_ignored():
    tracker = OffsetTracker()
    tracker.mark_committed({P1: 10})
    assert tracker.committable() == {}
    assert tracker.partitions() == []


@pytest.mark.parametrize("offset", [3, 2])
def test_tracking_out_of_order_or_twice_is_refused(offset):
    tracker = tracked(2, 3)
    with pytest.raises(ValueError, match="tracked after 3"):
        tracker.track(P0, offset)


def test_negative_offsets_are_refused():
    with pytest.raises(ValueError, match="negative"):
        tracked(-1)


def test_acking_an_untracked_offset_is_refused():
    tracker = tracked(0, 2)
    with pytest.raises(ValueError, match="not waiting"):
        tracker.ack(P0, 1)
    with pytest.raises(ValueError, match="not waiting"):
        tracker.ack(P1, 0)


def test_acking_twice_is_refused_whether_or_not_it_was_released():
    tracker = tracked(0, 1)
    tracker.ack(P0, 1)  # blocked behind 0
    with pytest.raises(ValueError, match="not waiting"):
        tracker.ack(P0, 1)
    tracker.ack(P0, 0)  # both released
    with pytest.raises(ValueError, match="not waiting"):
        tracker.ack(P0, 0)


def test_forget_drops_a_partition_and_it_can_start_over():
    tracker = tracked(0, 1)
    tracker.track(P1, 7)
    tracker.ack(P0, 0)
    tracker.forget([P0])
    assert tracker.partitions() == [P1]
    assert tracker.committable() == {}
    assert tracker.is_committed(P0, 0)  # not ours any more: nothing to wait for
    assert tracker.pending(P0) == 0
    tracker.track(P0, 0)  # re-assigned: the same offsets come again
    tracker.ack(P0, 0)
    assert tracker.committable() == {P0: 1}


def test_forgetting_an_unknown_partition_is_harmless():
    tracker = tracked(0)
    tracker.forget([P1])
    assert tracker.partitions() == [P0]


def test_last_tracked():
    tracker = tracked(4, 9)
    assert tracker.last_tracked(P0) == 9
    assert tracker.last_tracked(P1) is None
    tracker.ack(P0, 4)
    tracker.ack(P0, 9)
    assert tracker.last_tracked(P0) == 9  # still known after everything is done


# --- properties -------------------------------------------------------------------------------


def expected_position(offsets: list[int], acked: set[int]) -> int | None:
    """The model: one past the last offset of the longest fully acknowledged prefix."""
    position = None
    for offset in offsets:
        if offset not in acked:
            break
        position = offset + 1
    return position


@st.composite
def offsets_and_ack_order(draw):
    gaps = draw(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=40))
    start = draw(st.integers(min_value=0, max_value=1000))
    offsets = [start + sum(gaps[: i + 1]) - gaps[0] for i in range(len(gaps))]
    acks = draw(st.permutations(offsets))
    count = draw(st.integers(min_value=0, max_value=len(acks)))
    return offsets, acks[:count]


@given(offsets_and_ack_order())
def test_position_is_always_the_end_of_the_acknowledged_prefix(case):
    offsets, acks = case
    tracker = tracked(*offsets)
    acked: set[int] = set()
    for offset in acks:
        tracker.ack(P0, offset)
        acked.add(offset)
        position = expected_position(offsets, acked)
        assert tracker.committable().get(P0) == position
        # Never ahead of an unacknowledged offset: that would lose it on a crash.
        if position is not None:
            assert all(o in acked for o in offsets if o < position)
        assert tracker.pending(P0) == len(offsets) - sum(1 for o in offsets if position and o < position)


@given(offsets_and_ack_order())
def test_ack_order_does_not_matter_once_all_are_acked(case):
    offsets, _ = case
    forward, backward = tracked(*offsets), tracked(*offsets)
    for offset in offsets:
        forward.ack(P0, offset)
    for offset in reversed(offsets):
        backward.ack(P0, offset)
    assert forward.committable() == backward.committable() == {P0: offsets[-1] + 1}
    assert forward.pending() == backward.pending() == 0


class TrackerMachine(RuleBasedStateMachine):
    """Random interleavings of consume, ack, commit and forget over two partitions, against a model."""

    def __init__(self) -> None:
        super().__init__()
        self.tracker = OffsetTracker()
        self.offsets: dict[tuple[str, int], list[int]] = {P0: [], P1: []}
        self.acked: dict[tuple[str, int], set[int]] = {P0: set(), P1: set()}
        self.committed: dict[tuple[str, int], int | None] = {P0: None, P1: None}

    @rule(partition=st.sampled_from([P0, P1]), gap=st.integers(min_value=1, max_value=3))
    def consume(self, partition, gap):
        offsets = self.offsets[partition]
        offset = offsets[-1] + gap if offsets else gap - 1
        self.tracker.track(partition, offset)
        offsets.append(offset)

    @precondition(lambda self: any(set(o) - self.acked[p] for p, o in self.offsets.items()))
    @rule(data=st.data())
    def ack(self, data):
        partition = data.draw(st.sampled_from([p for p in (P0, P1) if set(self.offsets[p]) - self.acked[p]]))
        offset = data.draw(st.sampled_from(sorted(set(self.offsets[partition]) - self.acked[partition])))
        self.tracker.ack(partition, offset)
        self.acked[partition].add(offset)

    @rule()
    def commit(self):
        positions = self.tracker.committable()
        self.tracker.mark_committed(positions)
        for partition, position in positions.items():
            self.committed[partition] = position

    @rule(partition=st.sampled_from([P0, P1]))
    def forget(self, partition):
        self.tracker.forget([partition])
        # Re-assignment starts again after the committed position (what the group would hand out).
        committed = self.committed[partition]
        self.offsets[partition] = []
        self.acked[partition] = set()
        if committed is not None:
            self.tracker.track(partition, committed)
            self.offsets[partition] = [committed]
        self.committed[partition] = None

    @invariant()
    def matches_the_model(self):
        for partition in (P0, P1):
            position = expected_position(self.offsets[partition], self.acked[partition])
            committed = self.committed[partition]
            offered = self.tracker.committable().get(partition)
            if position is None or (committed is not None and position <= committed):
                assert offered is None
            else:
                assert offered == position
            # Everything below a committed position has been acknowledged.
            if committed is not None:
                assert all(o in self.acked[partition] for o in self.offsets[partition] if o < committed)


TestTrackerMachine = TrackerMachine.TestCase
TestTrackerMachine.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)
