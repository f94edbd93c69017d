"""Whether a polygon is usable: the plane geometry that the camera-settings contract refuses bad
masks and zones with. Pure functions, no I/O; polygons are sequences of (x, y) points, closed
implicitly (the last point joins the first)."""

from __future__ import annotations

from collections.abc import Sequence

Point = tuple[float, float]


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
