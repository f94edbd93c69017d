"""Direction of travel from a pass's boxes."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from stream_worker.contracts import Direction
from stream_worker.sightings.direction import DirectionRules, direction


def track(frames: int, dx: float = 0.0, grow: float = 1.0, jitter: float = 0.0, seed: int = 0):
    rng = random.Random(seed)
    points = []
    for k in range(frames):
        w, h = 100 * grow**k, 30 * grow**k
        cx = 500 + dx * k + rng.uniform(-jitter, jitter)
        cy = 400 + rng.uniform(-jitter, jitter)
        points.append((k * 0.1, (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)))
    return points


def test_growing_plate_approaches_and_shrinking_recedes():
    assert direction(track(10, grow=1.05)) is Direction.APPROACHING
    assert direction(track(10, grow=1 / 1.05)) is Direction.RECEDING


def test_sideways_travel_is_left_or_right_as_the_camera_sees_it():
    assert direction(track(10, dx=40)) is Direction.RIGHT
    assert direction(track(10, dx=-40)) is Direction.LEFT


def test_a_plate_that_barely_moves_is_stationary():
    assert direction(track(20, dx=2, grow=1.002, jitter=5)) is Direction.STATIONARY


def test_the_larger_change_decides_when_a_plate_both_grows_and_drifts():
    assert direction(track(10, dx=5, grow=1.08)) is Direction.APPROACHING  # +100% size, 0.4 widths
    assert direction(track(10, dx=60, grow=1.01)) is Direction.RIGHT  # +9% size, 5 widths


def test_one_time_is_no_direction():
    assert direction(track(1)) is None
    assert direction([(1.0, (0, 0, 10, 5)), (1.0, (50, 0, 60, 5))]) is None
    assert direction([]) is None


def test_thresholds_are_the_rules():
    points = track(10, dx=10)  # 0.9 plate widths over the pass
    assert direction(points) is Direction.STATIONARY
    assert direction(points, DirectionRules(min_shift_widths=0.5)) is Direction.RIGHT


def test_order_of_the_reads_does_not_matter():
    points = track(12, grow=1.04, jitter=3, seed=4)
    shuffled = points[:]
    random.Random(1).shuffle(shuffled)
    assert direction(shuffled) is direction(points) is Direction.APPROACHING


@given(
    st.integers(min_value=3, max_value=30),
    st.floats(min_value=1.03, max_value=1.2),
    st.integers(min_value=0, max_value=10_000),
)
def test_steady_growth_with_jitter_is_always_approaching(frames, grow, seed):
    # Growth of at least 1.03 per frame over >= 3 frames is >= 6%: ask for 5%.
    rules = DirectionRules(min_scale_change=0.05)
    assert direction(track(frames, grow=grow, jitter=2, seed=seed), rules) is Direction.APPROACHING
