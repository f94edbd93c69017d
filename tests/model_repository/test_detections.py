"""plate_recognition/1/detections.py: letterbox, decoding the detector's rows, NMS, corners (no Triton)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.conftest import samples_dir, weights_dir


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


def letterbox(detections, image: np.ndarray, fraction: float = 1.0, margin: int = 0):
    """One frame's canvas at one scale, as plate_recognition draws it, and its placement."""
    canvases = detections.canvases_for([image], (fraction,), (margin,))
    return canvases.batches[0].pixels[0], canvases.placements[0]


def test_a_16_by_9_frame_gets_a_canvas_of_its_own_aspect_on_the_square_canvas_grid(detections) -> None:
    """1920x1080 at scale 1.0: 640x360 pixels where the 640x640 letterbox had them (top 140), cut to
    the frame at multiples of 32: rows 128..512 of the square (top 140 - 128 = 12)."""
    frame = np.full((1080, 1920, 3), 200, np.uint8)
    canvas, placement = letterbox(detections, frame)
    assert canvas.shape == (384, 640, 3) and canvas.dtype == np.uint8
    assert (placement.scale, placement.left, placement.top) == (pytest.approx(1 / 3), 0, 12)
    assert (canvas[:12] == 0).all() and (canvas[372:] == 0).all() and (canvas[12:372] == 200).all()


def test_a_margin_keeps_black_around_the_frame_where_the_square_canvas_had_it(detections) -> None:
    canvas, placement = letterbox(detections, np.full((1080, 1920, 3), 200, np.uint8), margin=64)
    # square rows 76..500 needed (140 - 64 .. 500 + 64 = 564): from row 64, 512 rows
    assert canvas.shape == (512, 640, 3) and (placement.left, placement.top) == (0, 76)
    assert (canvas[76:436] == 200).all() and canvas[:76].max() == 0 and canvas[436:].max() == 0


def test_a_smaller_scale_leaves_a_black_frame_all_round(detections) -> None:
    canvas, placement = letterbox(detections, np.full((1080, 1920, 3), 200, np.uint8), fraction=0.75)
    # square: 480x270 at (80, 185); offsets modulo 32: (16, 25); canvas to the next multiple of 32
    assert canvas.shape == (320, 512, 3)
    assert (placement.scale, placement.left, placement.top) == (pytest.approx(0.25), 16, 25)
    assert (canvas[25:295, 16:496] == 200).all()
    assert canvas[:, :16].max() == 0 and canvas[:, 496:].max() == 0 and canvas[295:].max() == 0


@pytest.mark.parametrize(
    ("width", "height", "canvas"),
    [
        (1920, 1080, (384, 640)),  # 16:9
        (3840, 2160, (384, 640)),  # 4K: the same canvas
        (1440, 1080, (512, 640)),  # 4:3: 480 rows at row 16 of the grid
        (1080, 1920, (640, 384)),  # portrait
        (100, 50, (320, 640)),  # tiny: upscaled
        (640, 640, (640, 640)),  # square
    ],
)
def test_canvas_shapes_follow_the_frame(detections, width: int, height: int, canvas: tuple[int, int]) -> None:
    (canvas_w, canvas_h), (new_w, new_h), placement = detections.canvas_layout(width, height)
    assert (canvas_h, canvas_w) == canvas and canvas_w % 32 == 0 and canvas_h % 32 == 0
    assert max(new_w, new_h) == 640
    assert placement.left + new_w <= canvas_w and placement.top + new_h <= canvas_h


def test_small_frames_are_upscaled(detections) -> None:
    canvas, placement = letterbox(detections, np.full((100, 320, 3), 7, np.uint8))
    assert (placement.scale, placement.left, placement.top) == (2.0, 0, 220 % 32)
    assert canvas.shape == (256, 640, 3) and (canvas[28:228] == 7).all()


def test_canvases_group_views_by_shape_and_draw_each_scale(detections) -> None:
    frames = [
        np.full((1080, 1920, 3), 9, np.uint8),
        np.full((480, 640, 3), 5, np.uint8),
        np.full((720, 1280, 3), 3, np.uint8),
    ]
    canvases = detections.canvases_for(frames, (1.0, 0.75), (0, 0))
    shapes = {batch.pixels.shape[1:3]: batch.views for batch in canvases.batches}
    assert shapes == {(384, 640): [0, 4], (320, 512): [1, 5], (512, 640): [2], (384, 512): [3]}
    for batch in canvases.batches:
        for view, pixels in zip(batch.views, batch.pixels, strict=True):
            placement = canvases.placements[view]
            assert pixels[placement.top + 2, placement.left + 2, 0] == frames[view // 2][0, 0, 0]
    assert canvases.pixels == sum(b.pixels[..., 0].size for b in canvases.batches)


def test_the_smaller_scale_from_the_larger_matches_a_resize_of_the_frame(detections) -> None:
    rng = np.random.default_rng(1)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8), (9, 9), 3)
    canvases = detections.canvases_for([frame], (1.0, 0.75), (0, 0))
    direct, placement = letterbox(detections, frame, 0.75)
    (small,) = [b.pixels[0] for b in canvases.batches if b.views == [1]]
    assert small.shape == direct.shape and canvases.placements[1] == placement
    assert np.abs(small.astype(int) - direct.astype(int)).mean() < 1.0


def _frames_at_960x540() -> list[np.ndarray]:
    """What a 1080p or 4K camera frame is when decoded for the detector: real photos and video
    frames of ../shared, noise, and flat and extreme pixels."""
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, (540, 960, 3), dtype=np.uint8) for _ in range(3)]
    frames += [np.full((540, 960, 3), value, np.uint8) for value in (0, 1, 254, 255)]
    frames.append(np.indices((540, 960)).sum(axis=0).astype(np.uint8)[..., None].repeat(3, axis=2))
    photos = [
        samples_dir() / "car.jpg",
        *sorted((weights_dir().parent / "evalset" / "scenes").glob("*.jpg"))[:8],
    ]
    for path in photos:
        image = cv2.imread(str(path))
        assert image is not None, path
        frames.append(cv2.resize(image, (960, 540), interpolation=cv2.INTER_CUBIC))
    for video in sorted((weights_dir().parent / "videos").glob("*"))[:2]:
        capture = cv2.VideoCapture(str(video))
        ok, image = capture.read()
        capture.release()
        if ok:
            frames.append(cv2.resize(image, (960, 540), interpolation=cv2.INTER_AREA))
    return frames


def test_two_thirds_is_opencvs_area_resize_pixel_for_pixel(detections) -> None:
    """A 960x540 decode goes into its 640x360 canvas by integer sums (`_area_two_thirds_into`):
    every pixel is OpenCV's INTER_AREA's, written in place into the canvas."""
    frames = _frames_at_960x540()
    assert len(frames) >= 17
    for frame in frames:
        canvas = np.full((512, 640, 3), 7, np.uint8)
        target = canvas[76:436]
        detections.resize_into(frame, target)
        expected = cv2.resize(frame, (640, 360), interpolation=cv2.INTER_AREA)
        assert np.array_equal(canvas[76:436], expected)
        assert (canvas[:76] == 7).all() and (canvas[436:] == 7).all()


def test_only_exact_two_thirds_take_the_integer_path(detections) -> None:
    image = np.zeros((540, 960, 3), np.uint8)
    assert detections._two_thirds(image, np.zeros((360, 640, 3), np.uint8))
    assert not detections._two_thirds(image, np.zeros((360, 641, 3), np.uint8))
    assert not detections._two_thirds(np.zeros((541, 960, 3), np.uint8), np.zeros((360, 640, 3), np.uint8))
    assert not detections._two_thirds(np.zeros((540, 960), np.uint8), np.zeros((360, 640), np.uint8))
    assert not detections._two_thirds(image.astype(np.uint16), np.zeros((360, 640, 3), np.uint16))
    odd = np.random.default_rng(4).integers(0, 256, (500, 901, 3), dtype=np.uint8)
    target = np.zeros((333, 600, 3), np.uint8)
    detections.resize_into(odd, target)
    assert np.array_equal(target, cv2.resize(odd, (600, 333), interpolation=cv2.INTER_AREA))


def test_parse_margins_wants_one_per_scale(detections) -> None:
    assert detections.parse_margins("64,32", 2) == (64, 32)
    for bad in ("64", "64,-1", "1,2,3"):
        with pytest.raises(ValueError, match="detector_margins"):
            detections.parse_margins(bad, 2)


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
    placements = detections.canvases_for(frames, (1.0, 0.75), (0, 0)).placements
    assert [(p.left, p.top) for p in placements] == [(0, 12), (16, 25), (0, 16), (16, 12)]
    outputs = [np.zeros((100, 15), np.float32) for _ in placements]
    # frame 0's plate at (960, 540) size 120x30 px: at scale 1/3 and at 1/4
    outputs[0][0] = row(320, 12 + 180, 40, 10, objectness=0.8)
    outputs[1][7] = row(16 + 240, 25 + 135, 30, 7.5, objectness=0.9)
    # frame 1's plate only at scale 0.75 (480x360 at 0.75, placed at 16, 12)
    outputs[3][3] = row(16 + 75, 12 + 75, 30, 12)
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


@pytest.mark.parametrize("text", ["", "0", "4.5", "-0.5", "nan", "1.0,abc"])
def test_bad_scales_are_refused(detections, text: str) -> None:
    with pytest.raises(ValueError):
        detections.parse_scales(text)


def test_scales_parse(detections) -> None:
    assert detections.parse_scales("1.0, 0.75") == (1.0, 0.75)
    assert detections.parse_scales("3.0,0.5") == (3.0, 0.5)


@pytest.mark.parametrize(
    ("fraction", "margin", "canvas", "resized"),
    [
        (2.0, 64, (1280, 896), (1280, 720)),  # the frame at its own size, 64 px of black kept
        (3.0, 64, (1920, 1216), (1920, 1080)),  # upscaled 1.5x
        (1.5, 0, (960, 576), (960, 540)),  # on the square's stride-32 grid
    ],
)
def test_scales_above_one_show_the_whole_frame_larger(detections, fraction, margin, canvas, resized) -> None:
    """Above 1.0 the frame fills a larger square, whole (not cut at 640 pixels), on the same grid."""
    size, new, placement = detections.canvas_layout(1280, 720, fraction, margin)
    assert size == canvas and new == resized
    assert size[0] % 32 == 0 and size[1] % 32 == 0
    assert placement.scale == resized[0] / 1280
    assert placement.left + new[0] <= size[0] and placement.top + new[1] <= size[1]


def test_scaled_maps_a_reduced_decode_back_to_full_size(detections) -> None:
    found = detections.decode(row(50, 20, 20, 10)[None], detections.Placement(1.0, 0, 0), 100, 100, 0.25)
    full = found.scaled(4.0, 4.0)
    np.testing.assert_allclose(full.boxes[0], [160, 60, 240, 100])
    np.testing.assert_allclose(full.corners[0], [[160, 60], [240, 60], [240, 100], [160, 100]])
    assert full.scores[0] == found.scores[0]


def test_a_frame_may_ask_for_scales_of_its_own(detections) -> None:
    """b"" keeps the model's scales; a scale the model has keeps its margin, a new one gets 64
    pixels from 1.0 up and none below."""
    own = ((1.0, 0.5), (64, 0))
    assert detections.frame_scales(None, 2, *own) == [own, own]
    assert detections.frame_scales([b"", b"1.0,0.5,3.0", b"0.75"], 3, *own) == [
        own,
        ((1.0, 0.5, 3.0), (64, 0, 64)),
        ((0.75,), (0,)),
    ]


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ([b"5"], "frame 0: detector_scales must be"),
        ([b"1.0,abc"], "frame 0: detector_scales must be"),
        ([b"1,1,1,1,1"], "frame 0: detector_scales must be 1 to 4"),
        ([b"", b""], "2 values for 1 frames"),
    ],
)
def test_bad_frame_scales_say_why(detections, values: list[bytes], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        detections.frame_scales(values, 1, (1.0, 0.5), (64, 0))
