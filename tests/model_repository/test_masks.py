"""The per-frame masks plate_recognition applies before reading a plate (masks.py): parsing the
`plate_masks` input, and the box-centre test in the frame's own size."""

from __future__ import annotations

import itertools
import json
import random
from types import ModuleType

import numpy as np
import pytest

from stream_worker.cameras.geometry import point_in_polygon

LEFT_HALF = [[0.0, 0.0], [0.5, 0.0], [0.5, 1.0], [0.0, 1.0]]
RIGHT_HALF = [[0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.5, 1.0]]


def polygons(masks: ModuleType, value: object) -> tuple[np.ndarray, ...]:
    return masks.parse_masks(json.dumps(value).encode())


def test_no_masks_is_empty(masks: ModuleType) -> None:
    assert masks.parse_masks(b"") == ()
    assert polygons(masks, []) == ()


def test_polygons_parse_to_point_arrays(masks: ModuleType) -> None:
    parsed = polygons(masks, [LEFT_HALF, [[0.1, 0.1], [0.2, 0.1], [0.15, 0.3]]])
    assert [p.shape for p in parsed] == [(4, 2), (3, 2)]
    np.testing.assert_array_equal(parsed[0], np.array(LEFT_HALF))


def test_a_cameras_masks_are_parsed_once_and_shared_read_only(masks: ModuleType) -> None:
    """Each frame of a camera brings the same bytes (a new object each time): one parse, kept for
    at most PARSED_MASKS_KEPT cameras; a refusal is not kept."""
    value = [LEFT_HALF, [[0.1, 0.1], [0.2, 0.1], [0.15, 0.3]]]
    first, again = polygons(masks, value), polygons(masks, value)
    assert again is first
    with pytest.raises(ValueError, match="read-only"):
        first[0][0, 0] = 0.9
    assert masks.parse_masks.cache_info().maxsize == masks.PARSED_MASKS_KEPT
    for _ in range(2):
        with pytest.raises(ValueError, match="not JSON"):
            masks.parse_masks(b"{not json")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"masks": []}', "list of at most"),
        (json.dumps([LEFT_HALF] * 65).encode(), "list of at most 64"),
        (json.dumps([[[0, 0], [1, 0]]]).encode(), "polygon 0 is not a list of 3 to"),
        (json.dumps([LEFT_HALF, [[0, 0, 0], [1, 0, 0], [1, 1, 0]]]).encode(), "polygon 1 is not"),
        (json.dumps([[["a", 0], [1, 0], [1, 1]]]).encode(), "polygon 0 is not"),
        (json.dumps([[[0, 0], [1.5, 0], [1, 1]]]).encode(), "polygon 0 has coordinates outside 0..1"),
        (json.dumps([[[0, 0], [1, 0], [1, -0.1]]]).encode(), "outside 0..1"),
        (json.dumps([[[0, 0]] * 257]).encode(), "3 to 256"),
        (b"[" + b" " * 270000 + b"]", "more than 262144"),
    ],
)
def test_bad_masks_are_refused_with_the_reason(masks: ModuleType, data: bytes, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        masks.parse_masks(data)


def test_the_box_centre_in_the_frames_own_size_decides(masks: ModuleType) -> None:
    left_half = polygons(masks, [LEFT_HALF])
    straddling = np.array([[400, 100, 560, 130]], np.float32)  # centre x 480
    assert masks.masked_plates(straddling, left_half, 1000, 500).tolist() == [True]  # 0.48: left
    assert masks.masked_plates(straddling, left_half, 2000, 500).tolist() == [True]  # 0.24
    assert masks.masked_plates(straddling, left_half, 900, 500).tolist() == [False]  # 0.53: right


def test_any_polygon_masks_and_others_keep(masks: ModuleType) -> None:
    boxes = np.array([[10, 10, 30, 20], [810, 10, 830, 20], [410, 300, 430, 320]], np.float32)
    small_square = [[0.8, 0.0], [0.9, 0.0], [0.9, 0.1], [0.8, 0.1]]
    parsed = polygons(masks, [[[0.0, 0.0], [0.1, 0.0], [0.1, 0.1]], small_square])
    assert masks.masked_plates(boxes, parsed, 1000, 1000).tolist() == [True, True, False]
    assert masks.masked_plates(boxes, [], 1000, 1000).tolist() == [False] * 3
    assert masks.masked_plates(np.zeros((0, 4), np.float32), parsed, 1000, 1000).shape == (0,)


def test_a_centre_on_a_shared_edge_is_masked_by_exactly_one_of_two_polygons(masks: ModuleType) -> None:
    left, right = polygons(masks, [LEFT_HALF, RIGHT_HALF])
    on_edge = np.array([[400, 100, 600, 200]], np.float32)  # centre x exactly 0.5
    by_left = masks.masked_plates(on_edge, [left], 1000, 1000)[0]
    by_right = masks.masked_plates(on_edge, [right], 1000, 1000)[0]
    assert by_left != by_right


def test_the_rule_is_the_workers_zone_rule(masks: ModuleType) -> None:
    """Masks (in Triton) and zones (in the worker) must agree on which points a polygon holds."""
    shapes = [
        [[0.2, 0.1], [0.8, 0.3], [0.6, 0.9], [0.3, 0.6]],
        [[0.0, 0.0], [1.0, 0.0], [1.0, 0.5], [0.5, 0.5], [0.5, 1.0], [0.0, 1.0]],  # concave L
    ]
    rng = random.Random(3)
    grid = [i / 8 for i in range(9)]  # edges and corners too
    points = [(rng.random(), rng.random()) for _ in range(2000)] + list(itertools.product(grid, grid))
    xs = np.array([p[0] for p in points])
    ys = np.array([p[1] for p in points])
    for shape in shapes:
        (polygon,) = polygons(masks, [shape])
        expected = [point_in_polygon(x, y, [tuple(p) for p in shape]) for x, y in points]
        assert masks.inside_polygon(xs, ys, polygon).tolist() == expected


def test_the_largest_valid_camera_settings_fit_and_parse(masks: ModuleType) -> None:
    """Whatever `cameras set` accepts, Triton must take: else every frame of the camera would fail."""
    from stream_worker.contracts.cameras import MAX_POINTS, MAX_POLYGONS, CameraSettings
    from stream_worker.worker.camera_rules import CameraRules

    def polygon(k: int) -> list[list[float]]:
        # A convex MAX_POINTS-gon with full-precision coordinates (the longest JSON numbers).
        centre_x, centre_y, radius = 0.1 + 0.025 * k, 0.5, 0.0123456789012345
        return [
            [
                centre_x + radius * np.cos(2 * np.pi * i / MAX_POINTS),
                centre_y + radius * np.sin(2 * np.pi * i / MAX_POINTS),
            ]
            for i in range(MAX_POINTS)
        ]

    settings = CameraSettings.model_validate({"masks": [polygon(k) for k in range(MAX_POLYGONS)]})
    data = CameraRules({"cam": settings}.get).plate_masks("cam")
    parsed = masks.parse_masks(data)
    assert len(parsed) == MAX_POLYGONS and all(len(p) == MAX_POINTS for p in parsed)
    assert len(data) <= masks.MAX_MASKS_BYTES / 2  # with room to spare
    print(f"\nlargest valid masks: {len(data)} bytes of JSON")
