"""Plane geometry of the cameras' masks and zones: pure functions, no I/O, no settings.

Polygons are sequences of (x, y) points, closed implicitly (the last point joins the first).
`polygon_problem` is what the settings contract refuses; `point_in_polygon` is what the worker
asks per plate. `CameraGeometry` holds one camera's zones scaled to one frame size, with their
bounding boxes, so that a plate costs a few comparisons (see its docstring). Masks are applied by
Triton before a plate is read (model_repository/plate_recognition/1/masks.py, the same rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stream_worker.cameras.settings import CameraSettings

Point = tuple[float, float]
Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in pixels


def orientation(a: Point, b: Point, c: Point) -> float:
    """Twice the signed area of triangle abc: > 0 counter-clockwise, < 0 clockwise, 0 collinear."""
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def _on_segment(p: Point, a: Point, b: Point) -> bool:
    """p, known to be collinear with ab, lies within ab's bounding box (so on the segment)."""
    return min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])


def segments_intersect(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether the closed segments ab and cd share a point (crossing, touching or overlapping)."""
    o1, o2 = orientation(a, b, c), orientation(a, b, d)
    o3, o4 = orientation(c, d, a), orientation(c, d, b)
    if ((o1 > 0 and o2 < 0) or (o1 < 0 and o2 > 0)) and ((o3 > 0 and o4 < 0) or (o3 < 0 and o4 > 0)):
        return True
    return (
        (o1 == 0 and _on_segment(c, a, b))
        or (o2 == 0 and _on_segment(d, a, b))
        or (o3 == 0 and _on_segment(a, c, d))
        or (o4 == 0 and _on_segment(b, c, d))
    )


def signed_area(points: Sequence[Point]) -> float:
    """The shoelace area: > 0 when the points go counter-clockwise (in x-right, y-up axes)."""
    total = 0.0
    for i, (x1, y1) in enumerate(points):
        x2, y2 = points[(i + 1) % len(points)]
        total += x1 * y2 - x2 * y1
    return total / 2


def self_intersection(points: Sequence[Point]) -> str | None:
    """Why the closed polyline is not a simple polygon, or None when it is. Edge i joins point i
    to point i+1 (the last edge joins the last point to point 0)."""
    n = len(points)
    for i in range(n):
        if points[i] == points[(i + 1) % n]:
            return f"points {i} and {(i + 1) % n} are the same point"
    for i in range(n):
        # Adjacent edges share a point; they must not fold back along each other.
        a, b, c = points[i], points[(i + 1) % n], points[(i + 2) % n]
        if (
            n > 3
            and orientation(a, b, c) == 0
            and (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]) < 0
        ):
            return f"edges {i} and {(i + 1) % n} fold back on each other at point {(i + 1) % n}"
    for i in range(n):
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue  # adjacent through point 0
            if segments_intersect(points[i], points[(i + 1) % n], points[j], points[(j + 1) % n]):
                return (
                    f"edge {i} (point {i} to {(i + 1) % n}) crosses or touches "
                    f"edge {j} (point {j} to {(j + 1) % n})"
                )
    return None


def polygon_problem(points: Sequence[Point], min_points: int = 3) -> str | None:
    """Why `points` is not a usable polygon (too few points, self-intersecting, no area), or None."""
    if len(points) < min_points:
        return f"has {len(points)} point(s); a polygon needs at least {min_points}"
    problem = self_intersection(points)
    if problem is not None:
        return problem
    if signed_area(points) == 0:
        return "has no area (its points lie on one line)"
    return None


def point_in_polygon(x: float, y: float, points: Sequence[Point]) -> bool:
    """Even-odd crossing test. A point on an edge falls on one side only: of two polygons sharing
    an edge, exactly one contains it (half-open rule), so adjacent zones never both claim it."""
    inside = False
    n = len(points)
    x2, y2 = points[n - 1]
    for x1, y1 in points:
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
        x2, y2 = x1, y1
    return inside


@dataclass(frozen=True, slots=True)
class ScaledPolygon:
    """A polygon in pixels with its bounding box, the cheap test done before the exact one."""

    points: tuple[Point, ...]
    left: float
    top: float
    right: float
    bottom: float

    @classmethod
    def scale(cls, normalised: Sequence[Sequence[float]], width: float, height: float) -> ScaledPolygon:
        points = tuple((float(x) * width, float(y) * height) for x, y in normalised)
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return cls(points, min(xs), min(ys), max(xs), max(ys))

    def contains(self, x: float, y: float) -> bool:
        if x < self.left or x > self.right or y < self.top or y > self.bottom:
            return False
        return point_in_polygon(x, y, self.points)


def box_centre(box: Box) -> Point:
    x1, y1, x2, y2 = box
    return (x1 + x2) / 2, (y1 + y2) / 2


class CameraGeometry:
    """One camera's zones and minimum plate width in a frame of `width` x `height` pixels.

    Built once per (settings, frame size) and reused for every plate: a plate's zone is the first
    zone (in the settings' order) whose polygon contains its box centre, and it is too narrow when
    x2 - x1 < min_plate_width. A camera without zones or a minimum width answers without looking
    at the box.
    """

    __slots__ = ("height", "min_plate_width", "width", "zones")

    def __init__(
        self,
        width: int,
        height: int,
        zones: Sequence[tuple[str, Sequence[Sequence[float]]]] = (),
        min_plate_width: int | None = None,
    ) -> None:
        if width <= 0 or height <= 0:
            raise ValueError(f"frame size must be positive, got {width}x{height}")
        self.width = width
        self.height = height
        self.zones = tuple((name, ScaledPolygon.scale(polygon, width, height)) for name, polygon in zones)
        self.min_plate_width = min_plate_width

    @classmethod
    def from_settings(cls, settings: CameraSettings, width: int, height: int) -> CameraGeometry:
        zones = [(zone.name, zone.polygon) for zone in settings.zones]
        return cls(width, height, zones, settings.min_plate_width)

    def zone(self, box: Box) -> str | None:
        if not self.zones:
            return None
        x, y = box_centre(box)
        for name, polygon in self.zones:
            if polygon.contains(x, y):
                return name
        return None

    def too_narrow(self, box: Box) -> bool:
        return self.min_plate_width is not None and box[2] - box[0] < self.min_plate_width
