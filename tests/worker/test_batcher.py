"""A batch closes at max_frames or max_wait after its first frame, whichever comes first."""

from __future__ import annotations

import pytest

from stream_worker.worker.batcher import Batcher


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_closes_when_full():
    batcher = Batcher(3, 10.0, FakeClock())
    assert batcher.add(1) is None
    assert batcher.add(2) is None
    assert batcher.add(3) == [1, 2, 3]
    assert len(batcher) == 0
    assert batcher.poll() is None


def test_closes_when_the_first_frame_waited_long_enough():
    clock = FakeClock()
    batcher = Batcher(16, 0.025, clock)
    batcher.add("a")
    clock.now += 0.010
    batcher.add("b")
    assert batcher.poll() is None
    assert batcher.seconds_until_due() == pytest.approx(0.015)
    clock.now += 0.015
    assert batcher.seconds_until_due() == 0.0
    assert batcher.poll() == ["a", "b"]
    assert batcher.seconds_until_due() is None


def test_the_wait_starts_with_the_first_frame_of_each_batch():
    clock = FakeClock()
    batcher = Batcher(2, 1.0, clock)
    batcher.add(1)
    clock.now += 5
    assert batcher.add(2) == [1, 2]  # full, closes at once
    batcher.add(3)
    assert batcher.poll() is None  # a fresh wait, not the old one
    clock.now += 1.0
    assert batcher.poll() == [3]


def test_zero_wait_closes_at_every_poll():
    batcher = Batcher(16, 0.0, FakeClock())
    batcher.add(1)
    assert batcher.poll() == [1]


def test_one_frame_batches():
    batcher = Batcher(1, 10.0, FakeClock())
    assert batcher.add("x") == ["x"]


def test_flush_closes_early_and_is_none_when_empty():
    batcher = Batcher(16, 10.0, FakeClock())
    assert batcher.flush() is None
    batcher.add(1)
    assert batcher.flush() == [1]
    assert batcher.flush() is None
    assert batcher.poll() is None


def test_order_is_kept():
    batcher = Batcher(4, 10.0, FakeClock())
    closed = [batch for item in range(12) if (batch := batcher.add(item))]
    assert closed == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


@pytest.mark.parametrize(("frames", "wait"), [(0, 1.0), (1, -0.1)])
def test_bad_limits_are_refused(frames, wait):
    with pytest.raises(ValueError):
        Batcher(frames, wait)
