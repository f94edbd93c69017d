"""Outcomes are released in offset order per partition, whatever order they arrive in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.worker.ordering import InOrderRelease

P0 = ("frames", 0)
P1 = ("frames", 1)


def test_an_outcome_waits_for_every_earlier_offset_of_its_partition():
    release: InOrderRelease[str] = InOrderRelease()
    for offset in (0, 1, 2):
        release.expect(P0, offset)
    release.resolve(P0, 2, "c")
    release.resolve(P0, 1, "b")
    assert release.release() == []
    release.resolve(P0, 0, "a")
    assert release.release() == [(P0, 0, "a"), (P0, 1, "b"), (P0, 2, "c")]
    assert release.waiting() == 0


def test_partitions_do_not_block_each_other():
    release: InOrderRelease[str] = InOrderRelease()
    release.expect(P0, 0)
    release.expect(P1, 0)
    release.resolve(P1, 0, "x")
    assert release.release() == [(P1, 0, "x")]
    assert release.waiting(P0) == 1


def test_none_is_a_valid_outcome():
    release: InOrderRelease[str | None] = InOrderRelease()
    release.expect(P0, 5)
    release.resolve(P0, 5, None)
    assert release.release() == [(P0, 5, None)]


def test_misuse_is_refused():
    release: InOrderRelease[str] = InOrderRelease()
    release.expect(P0, 3)
    with pytest.raises(ValueError, match="expected after 3"):
        release.expect(P0, 3)
    with pytest.raises(ValueError, match="not awaiting"):
        release.resolve(P0, 4, "x")
    release.resolve(P0, 3, "x")
    with pytest.raises(ValueError, match="not awaiting"):
        release.resolve(P0, 3, "again")


def test_forget_drops_the_partition():
    release: InOrderRelease[str] = InOrderRelease()
    release.expect(P0, 0)
    release.expect(P1, 0)
    release.forget([P0])
    assert release.waiting() == 1
    with pytest.raises(ValueError):
        release.resolve(P0, 0, "late")
    release.expect(P0, 0)  # re-assigned later: starts over
    release.resolve(P0, 0, "again")
    assert release.release() == [(P0, 0, "again")]


@given(st.data())
def test_released_order_is_offset_order_for_any_resolution_order(data):
    count = data.draw(st.integers(min_value=1, max_value=30))
    offsets = list(range(0, count * 2, 2))
    release: InOrderRelease[int] = InOrderRelease()
    for offset in offsets:
        release.expect(P0, offset)
    released = []
    for offset in data.draw(st.permutations(offsets)):
        release.resolve(P0, offset, offset)
        released += [outcome for _, _, outcome in release.release()]
    assert released == offsets
