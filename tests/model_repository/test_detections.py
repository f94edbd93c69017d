"""plate_recognition/1/detections.py: letterbox, decoding the detector's rows, NMS, corners (no Triton)."""

from __future__ import annotations

import numpy as np
import pytest


def row(cx, cy, w, h, objectness=0.9, single=0.9, double=0.1, corners=None) -> np.ndarray:
    """One detector row in letterbox pixels; corners default to the box's."""
    if corners is None:
        corners = [
            cx - w / 2,
            cy - h / 2,
            cx + w / 2,
            cy - h / 2,
            cx + w / 2,
            cy + h / 2,
            cx - w / 2,
            cy + h / 2,
        ]
    return np.array([cx, cy, w, h, objectness, *corners, single, double], np.float32)


def test_letterbox_centres_a_16_by_9_frame_in_black(detections) -> None:
    frame = np.full((1080, 1920, 3), 200, np.uint8)
    canvas, placement = detections.letterbox(frame)
    assert canvas.shape == (640, 640, 3) and canvas.dtype == np.uint8
    assert (placement.scale, placement.left, placement.top) == (pytest.approx(1 / 3), 0, 140)
    assert (canvas[:140] == 0).all() and (canvas[500:] == 0).all() and (canvas[140:500] == 200).all()


def test_a_smaller_scale_leaves_a_black_frame_all_round(detections) -> None:
    canvas, placement = detections.letterbox(np.full((1080, 1920, 3), 200, np.uint8), fraction=0.75)
    assert (placement.scale, placement.left, placement.top) == (pytest.approx(0.25), 80, 185)
    assert (canvas[185:455, 80:560] == 200).all()
    assert canvas[:, :80].max() == 0 and canvas[:, 560:].max() == 0


def test_small_frames_are_upscaled(detections) -> None:
    canvas, placement = detections.letterbox(np.full((100, 320, 3), 7, np.uint8))
    assert (placement.scale, placement.left, placement.top) == (2.0, 0, 220)
    assert (canvas[220:420] == 7).all()


def test_decode_maps_rows_back_to_the_frame(detections) -> None:
    placement = detections.Placement(scale=0.25, left=80, top=185)
    corners = [90, 200, 130, 198, 131, 212, 91, 214]
    rows = np.stack([row(110, 206, 40, 16, 0.8, 0.9, 0.1, corners), row(300, 300, 10, 10, objectness=0.1)])
    found = detections.decode(rows, placement, 1920, 1080, threshold=0.25)
    assert len(found) == 1
    np.testing.assert_allclose(
        found.boxes[0], [(90 - 80) * 4, (198 - 185) * 4, (130 - 80) * 4, (214 - 185) * 4]
    )
    np.testing.assert_allclose(found.corners[0], [[40, 60], [200, 52], [204, 108], [44, 116]])
    assert found.scores[0] == pytest.approx(0.72)
    assert not found.double_row[0]


def test_decode_scores_by_the_likelier_layout_and_flags_double_row_plates(detections) -> None:
    placement = detections.Placement(1.0, 0, 0)
    found = detections.decode(row(50, 50, 20, 20, 0.5, 0.2, 0.8)[None], placement, 640, 640, 0.25)
    assert found.scores[0] == pytest.approx(0.4) and found.double_row[0]


def test_decode_clips_boxes_to_the_frame_but_not_corners(detections) -> None:
    found = detections.decode(row(5, 5, 20, 20)[None], detections.Placement(1.0, 0, 0), 100, 100, 0.25)
    np.testing.assert_allclose(found.boxes[0], [0, 0, 15, 15])
    assert found.corners[0].min() == pytest.approx(-5)


def test_decode_of_nothing_above_threshold_is_empty_with_the_right_shapes(detections) -> None:
    found = detections.decode(
        np.zeros((25200, 15), np.float32), detections.Placement(1.0, 0, 0), 10, 10, 0.25
    )
    assert (found.boxes.shape, found.corners.shape, found.scores.shape) == ((0, 4), (0, 4, 2), (0,))


def test_suppress_keeps_the_best_of_overlapping_boxes_and_separate_ones(detections) -> None:
    placement = detections.Placement(1.0, 0, 0)
    rows = np.stack([row(100, 100, 40, 10, 0.6), row(101, 100, 40, 10, 0.9), row(300, 100, 40, 10, 0.5)])
    kept = detections.suppress(detections.decode(rows, placement, 640, 640, 0.25), iou_threshold=0.5)
    assert kept.scores.tolist() == pytest.approx([0.81, 0.45])
    assert kept.boxes[0, 0] == pytest.approx(81)


def test_frame_detections_merges_the_scales_of_each_frame(detections) -> None:
    """Two frames at two scales: the same plate seen at both scales is one detection."""
    frames = [np.zeros((1080, 1920, 3), np.uint8), np.zeros((480, 640, 3), np.uint8)]
    canvases, placements = detections.canvases_for(frames, (1.0, 0.75))
    assert canvases.shape == (4, 640, 640, 3) and len(placements) == 4
    outputs = np.zeros((4, 25200, 15), np.float32)
    # frame 0's plate at (960, 540) size 120x30 px: at scale 1/3 and at 1/4
    outputs[0, 0] = row(320, 140 + 180, 40, 10, objectness=0.8)
    outputs[1, 7] = row(80 + 240, 185 + 135, 30, 7.5, objectness=0.9)
    # frame 1's plate only at scale 0.75 (480x360 at 0.75, placed at 80, 140)
    outputs[3, 3] = row(80 + 75, 140 + 75, 30, 12)
    found = detections.frame_detections(outputs, placements, [(1920, 1080), (640, 480)], 2, 0.25, 0.5)
    assert [len(f) for f in found] == [1, 1]
    np.testing.assert_allclose(found[0].boxes[0], [900, 525, 1020, 555], atol=1e-3)
    assert found[0].scores[0] == pytest.approx(0.81)
    np.testing.assert_allclose(found[1].boxes[0], [80, 92, 120, 108], atol=1e-3)


def test_usable_corners_fall_back_to_the_box_when_degenerate(detections) -> None:
    box = np.array([10, 20, 110, 50], np.float32)
    good = np.array([[12, 21], [108, 19], [109, 49], [11, 51]], np.float32)
    np.testing.assert_array_equal(detections.usable_corners(good, box), good)
    collapsed = np.array([[10, 20], [110, 20], [110, 20.5], [10, 20.5]], np.float32)
    nan = good.copy()
    nan[2, 0] = np.nan
    for bad in (collapsed, nan):
        np.testing.assert_array_equal(detections.usable_corners(bad, box), detections.box_corners(box))


@pytest.mark.parametrize("text", ["", "0", "1.5", "-0.5", "nan", "1.0,abc"])
def test_bad_scales_are_refused(detections, text: str) -> None:
    with pytest.raises(ValueError):
        detections.parse_scales(text)


def test_scales_parse(detections) -> None:
    assert detections.parse_scales("1.0, 0.75") == (1.0, 0.75)


def test_scaled_maps_a_reduced_decode_back_to_full_size(detections) -> None:
    found = detections.decode(row(50, 20, 20, 10)[None], detections.Placement(1.0, 0, 0), 100, 100, 0.25)
    full = found.scaled(4.0, 4.0)
    np.testing.assert_allclose(full.boxes[0], [160, 60, 240, 100])
    np.testing.assert_allclose(full.corners[0], [[160, 60], [240, 60], [240, 100], [160, 100]])
    assert full.scores[0] == found.scores[0]
