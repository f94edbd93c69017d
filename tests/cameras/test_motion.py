"""The motion gate: reduced frames, masks rasterised, the detector against its background, the
gate's decisions over time, one camera's resets, and the connector's pre-roll ring."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from stream_worker.cameras.geometry import point_in_polygon
from stream_worker.cameras.motion import (
    SCENE_CHANGE_SHARE,
    CameraMotion,
    Decision,
    MotionDetector,
    MotionGate,
    rasterise,
    reduce,
)
from stream_worker.contracts.cameras import CameraSettings, MotionSettings

W, H = 200, 100
SQUARE = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))
LEFT_HALF = ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0))
# An L: the square minus its top-right quarter (concave at (0.5, 0.5)).
ELL = ((0.0, 0.0), (1.0, 0.0), (1.0, 0.5), (0.5, 0.5), (0.5, 1.0), (0.0, 1.0))


def scene(seed: int = 0) -> np.ndarray:
    """A textured grey frame, smooth enough that a 3x3 blur keeps it."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(40, 200, size=(H // 10, W // 10))
    return np.kron(coarse, np.ones((10, 10))).astype(np.uint8)


def with_block(frame: np.ndarray, x: int, y: int, w: int, h: int, value: int = 255) -> np.ndarray:
    out = frame.copy()
    out[y : y + h, x : x + w] = value
    return out


def settings(**changes: object) -> MotionSettings:
    base = {"pixel_threshold": 25, "min_changed_share": 0.01, "pre_roll_s": 1.0, "post_roll_s": 2.0}
    base["heartbeat_s"] = 10.0
    return MotionSettings.model_validate(base | changes)


# reduce


def test_reduce_keeps_min_width_by_block_means():
    gray = np.arange(1920 * 1080, dtype=np.uint32).reshape(1080, 1920).astype(np.uint8)
    small = reduce(gray)
    assert small.shape == (1080 // 12, 160) and small.dtype == np.uint8
    assert small[0, 0] == round(gray[:12, :12].mean())


def test_reduce_trims_ragged_edges_and_rounds():
    gray = np.zeros((7, 9), np.uint8)
    gray[0, 0] = 3  # block mean 3/4 rounds to 1
    small = reduce(gray, min_width=4)
    assert small.shape == (3, 4)
    assert small[0, 0] == 1 and small.sum() == 1


def test_reduce_leaves_narrow_frames_alone():
    gray = scene()[:, :150]
    assert np.array_equal(reduce(gray), gray)
    with pytest.raises(ValueError):
        reduce(np.zeros((4, 4, 3), np.uint8))


# rasterise


def test_rasterise_nothing_and_everything():
    assert not rasterise((), W, H).any()
    assert rasterise((SQUARE,), W, H).all()
    half = rasterise((LEFT_HALF,), W, H)
    assert half[:, : W // 2].all() and not half[:, W // 2 :].any()


def test_rasterise_concave_and_overlapping_masks():
    ell = rasterise((ELL,), 10, 10)
    assert not ell[5:, 5:].any() and ell[:5, :].all() and ell[:, :5].all()  # rows are y, down
    both = rasterise((ELL, LEFT_HALF), 10, 10)
    assert np.array_equal(both, ell)  # overlapping masks are a union, not an even-odd of the two


def test_rasterise_matches_point_in_polygon_at_pixel_centres():
    rng = random.Random(7)
    for _ in range(20):
        # a star-shaped polygon around a random centre: simple, often concave
        cx, cy = rng.uniform(0.3, 0.7), rng.uniform(0.3, 0.7)
        count = rng.randint(3, 12)
        angles = sorted(rng.uniform(0, 6.283) for _ in range(count))
        polygon = tuple(
            (
                min(1.0, max(0.0, cx + r * np.cos(a))),
                min(1.0, max(0.0, cy + r * np.sin(a))),
            )
            for a, r in ((a, rng.uniform(0.05, 0.5)) for a in angles)
        )
        width, height = rng.randint(5, 40), rng.randint(5, 40)
        mask = rasterise((polygon,), width, height)
        for y in range(height):
            for x in range(width):
                expected = point_in_polygon((x + 0.5) / width, (y + 0.5) / height, polygon)
                assert mask[y, x] == expected


# MotionDetector


def test_first_frame_has_no_background_then_same_frame_changes_nothing():
    detector = MotionDetector(25)
    frame = scene()
    assert detector.measure(0.0, frame) is None
    assert detector.measure(0.25, frame) == 0.0


def test_changed_share_is_the_changed_area():
    detector = MotionDetector(25)
    frame = np.full((H, W), 100, np.uint8)
    detector.measure(0.0, frame)
    share = detector.measure(0.25, with_block(frame, 50, 20, 20, 20))
    # the 3x3 blur spreads the block by one pixel (a step of 155 is 52 there, over 25), but not
    # at the four corners outside it (17)
    assert share == pytest.approx((22 * 22 - 4) / (W * H))


def test_changes_under_the_threshold_and_camera_noise_are_not_motion():
    detector = MotionDetector(25)
    frame = scene()
    detector.measure(0.0, frame)
    assert detector.measure(0.25, (frame + 20).astype(np.uint8)) == 0.0
    rng = np.random.default_rng(1)
    for i in range(20):
        noisy = np.clip(frame + rng.normal(0, 6, frame.shape), 0, 255).astype(np.uint8)
        share = detector.measure(0.5 + i * 0.25, noisy)
        assert share is not None and share < 0.001


def test_masked_changes_are_left_out_and_the_share_is_of_unmasked_pixels():
    detector = MotionDetector(25, masks=(LEFT_HALF,))
    frame = np.full((H, W), 100, np.uint8)
    detector.measure(0.0, frame)
    assert detector.measure(0.25, with_block(frame, 10, 10, 40, 40)) == 0.0
    share = detector.measure(0.5, with_block(frame, 150, 40, 20, 20))
    assert share == pytest.approx((22 * 22 - 4) / (W * H / 2))


def test_everything_masked_never_moves():
    detector = MotionDetector(25, masks=(SQUARE,))
    frame = scene()
    detector.measure(0.0, frame)
    assert detector.measure(0.25, 255 - frame) == 0.0


def test_whole_scene_change_counts_once_and_replaces_the_background():
    detector = MotionDetector(25)
    frame = scene()
    detector.measure(0.0, frame)
    darker = (frame // 3).astype(np.uint8)  # lights off
    share = detector.measure(0.25, darker)
    assert share is not None and share >= SCENE_CHANGE_SHARE
    assert detector.measure(0.5, darker) == 0.0


def test_a_vehicle_standing_still_fades_into_the_background():
    detector = MotionDetector(25, background_s=5.0)
    frame = np.full((H, W), 100, np.uint8)
    parked = with_block(frame, 50, 20, 40, 40, value=220)
    detector.measure(0.0, frame)
    shares = [detector.measure(0.25 * i, parked) for i in range(1, 81)]  # 20 s
    assert shares[0] is not None and shares[0] > 0.05
    # 120 levels over the threshold of 25 fade out after 5 s * ln(120 / 25), about 7.8 s
    assert all(s is not None and s > 0.05 for s in shares[: int(7 / 0.25)])
    assert all(s == 0.0 for s in shares[int(9 / 0.25) :])


def test_a_change_that_stands_still_moves_on_its_first_frame_and_settles_after_settle_s():
    # A cut to another still view (a third of the pixels: under the whole-scene share), or a
    # vehicle that stopped: only its first frame differs from the frame before, so only that one
    # is moving; after settle_s the background is the new view at once instead of fading over 8 s.
    detector = MotionDetector(25, background_s=5.0, settle_s=1.0, still_share=0.002)
    frame = np.full((H, W), 100, np.uint8)
    parked = with_block(frame, 0, 0, W // 3, H, value=220)
    detector.measure(0.0, frame)
    shares = [detector.measure(0.1 * i, parked) for i in range(1, 13)]
    assert shares[0] is not None and shares[0] > 0.3
    assert shares[1:] == [0.0] * 11
    # settled (still since 0.1 s, settled at 1.1 s): the block leaving is a change of its size
    # against a background that is the parked view, not a half-faded average
    gone = detector.measure(1.3, frame)
    assert gone is not None and gone > 0.3
    # without settling, nothing is followed frame to frame: the same change is still "motion" 3 s later
    plain = MotionDetector(25, background_s=5.0)
    plain.measure(0.0, frame)
    assert [plain.measure(0.1 * i, parked) for i in range(1, 31)][-1] > 0.3


def test_something_moving_slowly_moves_whenever_it_moves_and_never_settles():
    # a block crawling one pixel every 0.2 s (5 px/s at the reduced size): each step differs from
    # the frame before it, so every step is motion, and it is never taken into the background
    detector = MotionDetector(25, background_s=5.0, settle_s=1.0, still_share=0.002)
    frame = np.full((H, W), 100, np.uint8)
    detector.measure(0.0, frame)
    shares = [
        detector.measure(0.1 * i, with_block(frame, 20 + i // 2, 30, 40, 40, 220)) for i in range(1, 81)
    ]
    steps = [share for i, share in enumerate(shares, start=1) if i % 2 == 0]  # the frames it moved in
    assert all(s is not None and 0.004 < s < 0.02 for s in steps)  # its two edges, not its area
    assert all(s == 0.0 for i, s in enumerate(shares, start=1) if i % 2 == 1 and i > 1)


def test_a_slow_change_is_moving_once_it_adds_up_against_the_still_frame():
    # a block brightening 4 levels a frame: no frame differs from the one before by the pixel
    # threshold, but against the frame the stillness began with it does every few frames
    detector = MotionDetector(25, background_s=60.0, settle_s=1.0, still_share=0.002)
    frame = np.full((H, W), 100, np.uint8)
    detector.measure(0.0, frame)
    shares = [detector.measure(0.1 * i, with_block(frame, 50, 20, 40, 40, 100 + 4 * i)) for i in range(1, 31)]
    moving = [i for i, share in enumerate(shares, start=1) if share]
    assert moving and all(b - a <= 7 for a, b in itertools.pairwise(moving))
    assert all(shares[i - 1] > 0.05 for i in moving)


def test_settle_needs_a_positive_time():
    with pytest.raises(ValueError):
        MotionDetector(25, settle_s=0.0)


def test_background_follows_stream_time_not_frame_count():
    frame = np.full((H, W), 100, np.uint8)
    parked = with_block(frame, 50, 20, 40, 40, value=220)
    fast, slow = MotionDetector(25), MotionDetector(25)
    fast.measure(0.0, frame)
    slow.measure(0.0, frame)
    for i in range(1, 41):  # 4 s at 10 frames/s
        fast_share = fast.measure(0.1 * i, parked)
    for i in range(1, 5):  # 4 s at 1 frame/s
        slow_share = slow.measure(float(i), parked)
    assert fast_share == pytest.approx(slow_share, abs=0.001)  # float32 rounding: a few pixels


def test_same_timestamp_does_not_move_the_background():
    detector = MotionDetector(25)
    frame = np.full((H, W), 100, np.uint8)
    parked = with_block(frame, 50, 20, 40, 40, value=220)
    detector.measure(1.0, frame)
    first = detector.measure(1.0, parked)
    assert detector.measure(1.0, parked) == first


def test_new_frame_size_or_reset_starts_a_new_background():
    detector = MotionDetector(25, masks=(LEFT_HALF,))
    detector.measure(0.0, scene())
    assert detector.measure(0.25, np.zeros((50, 80), np.uint8)) is None
    assert detector.measure(0.5, with_block(np.zeros((50, 80), np.uint8), 60, 10, 10, 10)) > 0
    detector.reset()
    assert detector.measure(0.75, scene()) is None
    with pytest.raises(ValueError):
        detector.measure(1.0, np.zeros((H, W, 3), np.uint8))
    with pytest.raises(ValueError):
        MotionDetector(25, background_s=0)


# MotionGate


def test_gate_heartbeat_motion_post_roll_static():
    gate = MotionGate(settings(post_roll_s=1.0, heartbeat_s=3.0))
    shares = {0.0: None, 0.5: 0.0, 1.0: 0.0, 2.5: 0.0, 3.0: 0.0, 3.5: 0.02, 4.0: 0.005, 4.5: 0.0}
    shares |= {5.0: 0.0, 5.5: 0.0, 7.5: 0.0, 8.0: 0.0, 8.5: 0.0}
    decisions = {t: gate.decide(t, share) for t, share in shares.items()}
    assert decisions == {
        0.0: Decision.HEARTBEAT,  # first: no background
        0.5: Decision.STATIC,
        1.0: Decision.STATIC,
        2.5: Decision.STATIC,
        3.0: Decision.HEARTBEAT,  # 3 s after the last examined frame
        3.5: Decision.MOTION,
        4.0: Decision.POST_ROLL,  # under min_changed_share
        4.5: Decision.POST_ROLL,  # exactly post_roll_s after the motion
        5.0: Decision.STATIC,
        5.5: Decision.STATIC,
        7.5: Decision.HEARTBEAT,  # 3 s after the last post-roll frame
        8.0: Decision.STATIC,
        8.5: Decision.STATIC,
    }


def test_gate_share_exactly_at_the_minimum_is_motion_and_heartbeats_add_up():
    gate = MotionGate(settings(min_changed_share=0.01, post_roll_s=0.0, heartbeat_s=1.0))
    assert gate.decide(0.0, 0.01) is Decision.MOTION
    assert gate.decide(0.1, 0.0099) is Decision.STATIC
    times = [round(0.1 * i, 1) for i in range(2, 40)]
    beats = [t for t in times if gate.decide(t, 0.0) is Decision.HEARTBEAT]
    assert beats == [1.0, 2.0, 3.0]  # 0.1 summed ten times is not quite 1.0: still a heartbeat
    assert [d.examined for d in Decision] == [True, True, True, False]


def test_gate_reset_forgets_motion_and_heartbeat():
    gate = MotionGate(settings())
    gate.decide(0.0, 0.5)
    gate.reset()
    assert gate.decide(0.1, 0.0) is Decision.HEARTBEAT


# CameraMotion


def test_camera_static_scene_is_mostly_static_and_motion_is_seen():
    camera = CameraMotion(settings(post_roll_s=1.0, heartbeat_s=5.0))
    frame = scene()
    decisions = [camera.observe(0.25 * i, frame).decision for i in range(40)]  # 10 s static
    assert decisions.count(Decision.HEARTBEAT) == 2 and decisions.count(Decision.STATIC) == 38
    moved = camera.observe(10.0, with_block(frame, 20, 20, 30, 30))
    assert moved.decision is Decision.MOTION and moved.share is not None and moved.share > 0.01
    # gone again: the background had taken in little of it, so nothing changed against it
    assert camera.observe(10.25, frame) == type(moved)(Decision.POST_ROLL, 0.0, 0.0)
    assert camera.observe(11.0, frame).decision is Decision.POST_ROLL
    assert camera.observe(11.25, frame).decision is Decision.STATIC


def test_camera_examines_a_change_that_stays_for_the_post_roll_and_the_plain_detector_for_ever():
    frame = scene()
    stopped = with_block(frame, 20, 20, 60, 60)  # a vehicle stopped in view (18 % of the frame)
    settled, plain = (
        CameraMotion(settings(post_roll_s=1.0)),
        CameraMotion(settings(post_roll_s=1.0), settle_s=None),
    )
    for camera in (settled, plain):
        camera.observe(0.0, frame)
    after = {id(c): [c.observe(0.1 * i, stopped).decision for i in range(1, 51)] for c in (settled, plain)}
    # settled: its first frame is motion, the post-roll second after it, then static
    assert after[id(settled)][:11] == [Decision.MOTION] + [Decision.POST_ROLL] * 10  # 0.1 .. 1.1 s
    assert after[id(settled)][11:] == [Decision.STATIC] * 39
    assert after[id(plain)] == [Decision.MOTION] * 50  # still fading 5 s later


def test_camera_time_backwards_or_gap_starts_again():
    camera = CameraMotion(settings(heartbeat_s=5.0))
    frame = scene()
    for i in range(5):
        camera.observe(100 + 0.25 * i, frame)
    assert camera.observe(101.25, frame).decision is Decision.STATIC
    backwards = camera.observe(50.0, frame)
    assert backwards == type(backwards)(Decision.HEARTBEAT, None)
    assert camera.observe(50.25, frame).decision is Decision.STATIC
    assert camera.observe(55.25, frame).decision is Decision.HEARTBEAT  # 5 s gap: still within
    assert camera.observe(55.5, frame).share == 0.0
    assert camera.observe(60.6, frame).share is None  # over 5 s: a new background
    assert camera.resets == 2
    with pytest.raises(ValueError):
        camera.observe(float("nan"), frame)


def test_camera_new_frame_size_forgets_the_motion_before():
    camera = CameraMotion(settings(post_roll_s=5.0))
    frame = scene()
    camera.observe(0.0, frame)
    assert camera.observe(0.25, with_block(frame, 0, 0, 50, 50)).decision is Decision.MOTION
    small = np.zeros((50, 80), np.uint8)
    assert camera.observe(0.5, small).decision is Decision.HEARTBEAT
    assert camera.observe(0.75, small).decision is Decision.STATIC  # no post-roll of the old motion


def test_camera_masks_come_from_the_settings():
    assert CameraMotion.for_camera(CameraSettings()) is None
    disabled = CameraSettings(motion=MotionSettings(enabled=False))
    assert CameraMotion.for_camera(disabled) is None
    camera = CameraMotion.for_camera(CameraSettings(motion=settings(), masks=(LEFT_HALF,)))
    assert camera is not None
    frame = np.full((H, W), 100, np.uint8)
    camera.observe(0.0, frame)
    assert camera.observe(0.25, with_block(frame, 0, 0, 90, 90)).decision is Decision.STATIC
    assert camera.observe(0.5, with_block(frame, 110, 0, 90, 90)).decision is Decision.MOTION


def test_observation_says_when_not_one_pixel_differs_from_the_background():
    camera = CameraMotion(settings(post_roll_s=0.0))
    frame = scene()
    first = camera.observe(0.0, frame)
    assert first.background_share is None and not first.unchanged  # no background yet: not known
    same = camera.observe(0.1, frame)
    assert same.background_share == 0.0 and same.unchanged and same.decision is Decision.STATIC
    # something small, under min_changed_share (1 %): static, but not unchanged
    small = camera.observe(0.2, with_block(frame, 0, 0, 8, 8, value=255))
    assert small.decision is Decision.STATIC and small.share and not small.unchanged
    # a vehicle that came and stands: moving on its first frame, then no longer moving, yet still
    # differing from the background
    came = camera.observe(0.3, with_block(frame, 100, 40, 30, 30, value=255))
    assert came.decision is Decision.MOTION
    stands = camera.observe(0.4, with_block(frame, 100, 40, 30, 30, value=255))
    assert stands.share == 0.0 and stands.background_share and not stands.unchanged
