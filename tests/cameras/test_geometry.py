"""The masks' and zones' geometry: segment intersection, simple polygons, point in polygon, and
the per-frame `CameraGeometry` the worker asks about each plate box (zones, minimum width)."""

from __future__ import annotations

import itertools
import random

import pytest

from stream_worker.cameras.geometry import CameraGeometry, box_centre, point_in_polygon
from stream_worker.contracts.cameras import CameraSettings, Zone
from stream_worker.contracts.polygons import (
    orientation,
    polygon_problem,
    segments_intersect,
    self_intersection,
    signed_area,
)

SQUARE = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
# An L: the square minus its top-right quarter (concave at (0.5, 0.5)).
ELL = [(0.0, 0.0), (1.0, 0.0), (1.0, 0.5), (0.5, 0.5), (0.5, 1.0), (0.0, 1.0)]


def test_orientation_signs():
    assert orientation((0, 0), (1, 0), (0, 1)) > 0
    assert orientation((0, 0), (0, 1), (1, 0)) < 0
    assert orientation((0, 0), (1, 1), (2, 2)) == 0


@pytest.mark.parametrize(
    ("a", "b", "c", "d", "expected"),
    [
        ((0, 0), (1, 1), (0, 1), (1, 0), True),  # proper crossing
        ((0, 0), (1, 0), (0, 1), (1, 1), False),  # parallel
        ((0, 0), (1, 0), (2, 0), (3, 0), False),  # collinear, apart
        ((0, 0), (2, 0), (1, 0), (3, 0), True),  # collinear, overlapping
        ((0, 0), (1, 0), (1, 0), (2, 0), True),  # collinear, touching end to end
        ((0, 0), (2, 0), (1, 0), (1, 5), True),  # T: an end on the other's middle
        ((0, 0), (2, 0), (1, 1), (1, 5), False),  # T that stops short
        ((0, 0), (1, 1), (1, 0), (2, -1), False),  # would cross only if extended
        ((0, 0), (0, 2), (0, 1), (0, 3), True),  # vertical overlap
        ((0, 0), (0, 1), (0, 2), (0, 3), False),  # vertical, apart
    ],
)
def test_segments_intersect(a, b, c, d, expected):
    # Symmetric in the order of the segments and of each segment's ends.
    for p, q, r, s in ((a, b, c, d), (b, a, c, d), (c, d, a, b), (d, c, b, a)):
        assert segments_intersect(p, q, r, s) is expected, (p, q, r, s)


def test_signed_area_is_positive_counter_clockwise_in_y_up_axes():
    assert signed_area(SQUARE) == 1.0
    assert signed_area(SQUARE[::-1]) == -1.0
    assert signed_area(ELL) == 0.75


def test_simple_polygons_have_no_problem():
    assert polygon_problem(SQUARE) is None
    assert polygon_problem(SQUARE[::-1]) is None
    assert polygon_problem(ELL) is None
    assert polygon_problem([(0, 0), (1, 0), (0, 1)]) is None
    # Collinear consecutive points on a straight edge are allowed.
    assert polygon_problem([(0, 0), (0.5, 0), (1, 0), (1, 1)]) is None


@pytest.mark.parametrize(
    ("points", "words"),
    [
        ([(0, 0), (1, 0)], "has 2 point(s); a polygon needs at least 3"),
        ([], "has 0 point(s)"),
        ([(0, 0), (1, 0), (0, 1), (1, 1)], "edge 1 (point 1 to 2) crosses or touches edge 3 (point 3 to 0)"),
        ([(0, 0), (1, 0), (1, 0), (0, 1)], "points 1 and 2 are the same point"),
        ([(0, 0), (1, 0), (0, 1), (0, 0)], "points 3 and 0 are the same point"),
        ([(0, 0), (0.5, 0), (1, 0)], "has no area"),
        ([(0, 0), (1, 0), (0.5, 0), (0.5, 1)], "edges 0 and 1 fold back on each other at point 1"),
        # A vertex touching a non-adjacent edge (a pinched polygon).
        ([(0, 0), (1, 0), (0.5, 0.0), (1, 1), (0, 1)], "fold back"),
        ([(0, 0), (2, 0), (2, 2), (1, 0), (0, 2)], "crosses or touches"),
        # Two loops through one point (a bow tie drawn around).
        ([(0, 0), (1, 1), (2, 0), (2, 2), (1, 1), (0, 2)], "crosses or touches"),
    ],
)
def test_bad_polygons_are_named(points, words):
    problem = polygon_problem(points)
    assert problem is not None and words in problem, problem


def test_self_intersection_checks_every_non_adjacent_pair():
    # A star drawn by skipping a vertex of a regular pentagon crosses itself five times.
    import math

    pentagon = [(math.cos(2 * math.pi * k / 5), math.sin(2 * math.pi * k / 5)) for k in range(5)]
    star = [pentagon[(2 * k) % 5] for k in range(5)]
    assert self_intersection(pentagon) is None
    assert "crosses" in self_intersection(star)


def _brute_inside(x: float, y: float, polygon, samples: int = 0) -> bool:
    """Winding number: an independent definition of inside for simple polygons."""
    import math

    total = 0.0
    for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        a1, a2 = math.atan2(y1 - y, x1 - x), math.atan2(y2 - y, x2 - x)
        delta = a2 - a1
        while delta > math.pi:
            delta -= 2 * math.pi
        while delta < -math.pi:
            delta += 2 * math.pi
        total += delta
    return abs(total) > math.pi


@pytest.mark.parametrize("polygon", [SQUARE, SQUARE[::-1], ELL, ELL[::-1]])
def test_point_in_polygon_agrees_with_the_winding_number_off_the_edges(polygon):
    rng = random.Random(21)
    for _ in range(2000):
        x, y = rng.uniform(-0.5, 1.5), rng.uniform(-0.5, 1.5)
        if min(abs(x - v) for v in (0, 0.5, 1)) < 1e-9 or min(abs(y - v) for v in (0, 0.5, 1)) < 1e-9:
            continue
        assert point_in_polygon(x, y, polygon) is _brute_inside(x, y, polygon), (x, y)


def test_concave_notch_is_outside():
    assert point_in_polygon(0.25, 0.25, ELL)
    assert point_in_polygon(0.25, 0.75, ELL)
    assert not point_in_polygon(0.75, 0.75, ELL)  # the missing quarter


def test_a_point_on_an_edge_shared_by_two_zones_is_in_exactly_one():
    left = [(0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0)]
    right = [(0.5, 0.0), (1.0, 0.0), (1.0, 1.0), (0.5, 1.0)]
    top = [(0.0, 0.0), (1.0, 0.0), (1.0, 0.5), (0.0, 0.5)]
    bottom = [(0.0, 0.5), (1.0, 0.5), (1.0, 1.0), (0.0, 1.0)]
    for k in range(1, 20):
        t = k / 20
        assert point_in_polygon(0.5, t, left) != point_in_polygon(0.5, t, right), t
        assert point_in_polygon(t, 0.5, top) != point_in_polygon(t, 0.5, bottom), t


def test_box_centre():
    assert box_centre((10, 20, 30, 60)) == (20, 40)


def _settings(**fields) -> CameraSettings:
    return CameraSettings.model_validate(fields)


def test_geometry_scales_polygons_to_the_frame():
    # The zone covers the bottom-right quarter of any frame.
    settings = _settings(zones=[{"name": "lane", "polygon": [[0.5, 0.5], [1, 0.5], [1, 1], [0.5, 1]]}])
    for width, height in ((1920, 1080), (640, 480), (100, 100)):
        geometry = CameraGeometry.from_settings(settings, width, height)
        left = (0.1 * width, 0.1 * height, 0.3 * width, 0.2 * height)
        bottom_right = (0.7 * width, 0.7 * height, 0.9 * width, 0.8 * height)
        top_right = (0.7 * width, 0.1 * height, 0.9 * width, 0.2 * height)
        assert geometry.zone(left) is None
        assert geometry.zone(bottom_right) == "lane"
        assert geometry.zone(top_right) is None


def test_the_box_centre_decides_not_its_overlap():
    settings = _settings(zones=[{"name": "left", "polygon": [[0, 0], [0.5, 0], [0.5, 1], [0, 1]]}])
    geometry = CameraGeometry.from_settings(settings, 1000, 1000)
    assert geometry.zone((100, 100, 800, 200)) == "left"  # centre x 450: inside, though mostly outside
    assert geometry.zone((300, 100, 900, 200)) is None  # centre x 600: outside, though overlapping


def test_the_first_zone_in_order_wins():
    everywhere = [[0, 0], [1, 0], [1, 1], [0, 1]]
    settings = _settings(
        zones=[
            {"name": "first", "polygon": [[0, 0], [0.5, 0], [0.5, 1], [0, 1]]},
            {"name": "second", "polygon": everywhere},
        ]
    )
    geometry = CameraGeometry.from_settings(settings, 200, 100)
    assert geometry.zone((10, 10, 20, 20)) == "first"
    assert geometry.zone((150, 10, 160, 20)) == "second"


def test_minimum_plate_width_in_pixels():
    geometry = CameraGeometry.from_settings(_settings(min_plate_width=40), 1920, 1080)
    assert geometry.too_narrow((100, 0, 139, 10))
    assert not geometry.too_narrow((100, 0, 140, 10))
    assert not CameraGeometry.from_settings(_settings(), 1920, 1080).too_narrow((0, 0, 1, 1))


def test_a_zone_and_the_minimum_width_answer_apart():
    everywhere = Zone(name="all", polygon=((0, 0), (1, 0), (1, 1), (0, 1)))
    settings = _settings(zones=[everywhere], min_plate_width=50)
    geometry = CameraGeometry.from_settings(settings, 100, 100)
    assert (geometry.zone((10, 10, 20, 20)), geometry.too_narrow((10, 10, 20, 20))) == ("all", True)
    assert (geometry.zone((0, 10, 100, 20)), geometry.too_narrow((0, 10, 100, 20))) == ("all", False)


def test_default_settings_never_zone_or_drop():
    geometry = CameraGeometry.from_settings(CameraSettings(), 640, 480)
    for box in itertools.product((0, 320, 640), repeat=4):
        assert geometry.zone(box) is None and not geometry.too_narrow(box)


def test_a_frame_without_size_is_refused():
    with pytest.raises(ValueError, match="frame size must be positive"):
        CameraGeometry(0, 480)


def test_the_bounding_box_shortcut_agrees_with_the_exact_test():
    settings = _settings(zones=[{"name": "z", "polygon": [[0.2, 0.1], [0.8, 0.3], [0.6, 0.9], [0.3, 0.6]]}])
    geometry = CameraGeometry.from_settings(settings, 640, 480)
    polygon = [(x * 640, y * 480) for x, y in settings.zones[0].polygon]
    rng = random.Random(7)
    inside = 0
    for _ in range(3000):
        x, y = rng.uniform(0, 640), rng.uniform(0, 480)
        expected = point_in_polygon(x, y, polygon)
        inside += expected
        assert (geometry.zone((x - 5, y - 3, x + 5, y + 3)) == "z") is expected
    assert 300 < inside < 2700  # both answers were exercised
