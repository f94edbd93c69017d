"""Plane geometry of the cameras' masks and zones as the worker applies them: pure, no I/O.

Polygons are sequences of (x, y) points, closed implicitly (the last point joins the first); what
the settings contract refuses is in `stream_worker.contracts.polygons`. `point_in_polygon` is what
the worker asks per plate. `CameraGeometry` holds one camera's zones scaled to one frame size, with their
bounding boxes, so that a plate costs a few comparisons (see its docstring). Masks are applied by
Triton before a plate is read (model_repository/plate_recognition/1/masks.py, the same rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.polygons import Point

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in pixels


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
