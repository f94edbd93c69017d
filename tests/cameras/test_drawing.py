"""Drawing masks and zones over a frame (stream_worker/cameras/drawing.py): masked pixels are
tinted dark red and nothing else changes, zones are outlined in their colour, any size and any
8-/16-bit grayscale, colour or alpha image works."""

from __future__ import annotations

import numpy as np
import pytest

from stream_worker.cameras.drawing import (
    MASK_ALPHA,
    MASK_COLOUR,
    ZONE_COLOURS,
    draw_settings,
    scale_polygon,
    to_bgr,
    zone_colour,
)
from stream_worker.contracts.cameras import CameraSettings, parse_settings

GREY = 128
SQUARE = [[0.25, 0.25], [0.75, 0.25], [0.75, 0.75], [0.25, 0.75]]


def _grey(height: int, width: int) -> np.ndarray:
    return np.full((height, width, 3), GREY, dtype=np.uint8)


def _expected_tint() -> np.ndarray:
    return np.rint(GREY * (1 - MASK_ALPHA) + np.asarray(MASK_COLOUR) * MASK_ALPHA).astype(np.uint8)


@pytest.mark.parametrize(("height", "width"), [(480, 640), (439, 780), (37, 23), (1080, 1920)])
def test_a_mask_tints_inside_and_leaves_outside_alone(height: int, width: int) -> None:
    image = _grey(height, width)
    canvas = draw_settings(image, parse_settings({"masks": [SQUARE]}))
    assert canvas.shape == (height, width, 3) and canvas.dtype == np.uint8
    assert (image == GREY).all()  # the input is untouched
    centre = canvas[height // 2, width // 2]
    assert (centre == _expected_tint()).all()
    assert centre[2] > centre[0] and centre[2] > centre[1]  # reddened
    assert centre[0] < GREY  # darkened
    # Far from the mask (and its outline) nothing changes.
    for y, x in [(0, 0), (height - 1, width - 1), (0, width - 1), (height - 1, 0)]:
        assert (canvas[y, x] == GREY).all(), (y, x)


def test_overlapping_masks_are_tinted_once() -> None:
    other = [[0.5, 0.5], [1.0, 0.5], [1.0, 1.0], [0.5, 1.0]]
    canvas = draw_settings(_grey(200, 200), parse_settings({"masks": [SQUARE, other]}))
    assert (canvas[130, 130] == _expected_tint()).all()  # in both masks
    assert (canvas[180, 180] == _expected_tint()).all()  # in the second only


def test_the_mask_outline_is_drawn_in_the_mask_colour() -> None:
    canvas = draw_settings(_grey(400, 400), parse_settings({"masks": [SQUARE]}))
    assert (canvas[100, 200] == MASK_COLOUR).all()  # on the top edge
    assert (canvas[300, 200] == MASK_COLOUR).all()  # on the bottom edge


def test_zones_are_outlined_in_their_own_colour_and_only_outlined() -> None:
    settings = parse_settings(
        {
            "zones": [
                {"name": "lane-1", "polygon": SQUARE},
                {"name": "kerb", "polygon": [[0.0, 0.9], [1.0, 0.9], [1.0, 1.0], [0.0, 1.0]]},
            ]
        }
    )
    canvas = draw_settings(_grey(400, 400), settings)
    first, second = zone_colour(0), zone_colour(1)
    assert first != second
    assert (canvas[300, 200] == first).all()  # bottom edge of lane-1
    assert (canvas[200, 100] == first).all()  # left edge
    assert (canvas[200, 200] == GREY).all()  # a zone is not filled
    assert (canvas[360, 200] == second).all()  # top edge of kerb
    assert (canvas[50, 350] == GREY).all()


def test_the_zone_name_is_written_inside_near_its_first_point() -> None:
    settings = parse_settings({"zones": [{"name": "lane-1", "polygon": SQUARE}]})
    canvas = draw_settings(_grey(400, 400), settings)
    colour = np.asarray(zone_colour(0))
    # The label box: filled with the zone's colour just inside the first point (100, 100).
    label = canvas[104:125, 104:150]
    assert (label == colour).all(axis=2).mean() > 0.5
    assert (label != colour).any(axis=2).any()  # with text on it
    # Nothing of it outside the zone, up and left of the first point.
    assert (canvas[:96, :96] == GREY).all()


def test_a_label_at_the_image_edge_stays_inside_the_image() -> None:
    # The first point is the bottom-right corner: the label goes up and left of it.
    corner = [[1.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]]
    settings = parse_settings({"zones": [{"name": "everything", "polygon": corner}]})
    canvas = draw_settings(_grey(120, 160), settings)
    colour = np.asarray(zone_colour(0))
    assert (canvas[95:110, 100:150] == colour).all(axis=2).mean() > 0.5


def test_a_border_polygon_stays_visible() -> None:
    full = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    canvas = draw_settings(_grey(50, 80), parse_settings({"zones": [{"name": "z", "polygon": full}]}))
    assert (canvas[49, 40] == zone_colour(0)).all()  # x/y 1.0 is clamped onto the last pixel
    assert (canvas[25, 79] == zone_colour(0)).all()


def test_no_settings_draw_nothing() -> None:
    image = np.random.default_rng(1).integers(0, 256, (60, 90, 3), dtype=np.uint8)
    assert (draw_settings(image, CameraSettings()) == image).all()


def test_the_palette_repeats() -> None:
    assert zone_colour(len(ZONE_COLOURS)) == zone_colour(0)
    assert MASK_COLOUR not in ZONE_COLOURS


def test_scale_polygon_is_the_workers_scaling_clamped_to_the_last_pixel() -> None:
    points = scale_polygon([[0.0, 0.0], [0.5, 0.25], [1.0, 1.0]], 200, 100) / 16
    assert points.tolist() == [[0.0, 0.0], [100.0, 25.0], [199.0, 99.0]]


def test_grayscale_images_become_grey_bgr() -> None:
    for gray in (np.full((30, 40), 77, np.uint8), np.full((30, 40, 1), 77, np.uint8)):
        bgr = to_bgr(gray)
        assert bgr.shape == (30, 40, 3) and (bgr == 77).all()
    canvas = draw_settings(np.full((100, 100), GREY, np.uint8), parse_settings({"masks": [SQUARE]}))
    assert canvas.shape == (100, 100, 3) and (canvas[50, 50] == _expected_tint()).all()


def test_alpha_is_composited_over_white() -> None:
    bgra = np.zeros((10, 10, 4), np.uint8)
    bgra[..., :3] = (0, 0, 200)
    bgra[:, :5, 3] = 255  # left half opaque red, right half transparent
    bgr = to_bgr(bgra)
    assert (bgr[:, :5] == (0, 0, 200)).all()
    assert (bgr[:, 5:] == 255).all()
    gray_alpha = np.zeros((4, 4, 2), np.uint8)
    gray_alpha[..., 0], gray_alpha[..., 1] = 60, 255
    assert (to_bgr(gray_alpha) == 60).all()


def test_16_bit_images_are_scaled_to_8_bits() -> None:
    assert (to_bgr(np.full((5, 5), 65535, np.uint16)) == 255).all()
    assert (to_bgr(np.full((5, 5, 3), 32896, np.uint16)) == 128).all()


@pytest.mark.parametrize(
    "array", [np.zeros((0, 0, 3), np.uint8), np.zeros((4, 4), np.float32), np.zeros((4, 4, 5), np.uint8)]
)
def test_unusable_arrays_are_refused(array: np.ndarray) -> None:
    with pytest.raises(ValueError):
        to_bgr(array)
