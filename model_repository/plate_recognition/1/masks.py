"""Per-frame masks: the areas of a frame whose plates nobody wants (a car park, a billboard), so
that `plate_recognition` drops them before their crop, STN, LPRNet and picture cost anything.

The client sends, per frame, the camera's mask polygons as JSON in the optional `plate_masks`
input: `[[[x, y], ...], ...]`, coordinates normalised to the frame (0..1), b"" for none. A plate
is masked when its box centre lies inside any polygon: the even-odd crossing rule with half-open
edges, as the worker's zones use (stream_worker/cameras/geometry.py), so a centre on an edge
shared by two polygons falls in exactly one. Pure numpy, no Triton import (unit-tested directly).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

import numpy as np

MAX_MASKS_BYTES = 262144  # per frame: the largest valid camera settings take ~90 KB (test_masks.py)
MAX_POLYGONS = 64
MAX_POINTS = 256
# A camera's masks come with each of its frames, byte for byte the same: parsed once per camera
# (the largest settings take ~2 ms to parse). Bounded: at most this many cameras' masks, each at
# most MAX_MASKS_BYTES of key and its polygons' points.
PARSED_MASKS_KEPT = 32

Polygon = np.ndarray  # float64 (n, 2), normalised


@functools.lru_cache(maxsize=PARSED_MASKS_KEPT)
def parse_masks(data: bytes) -> tuple[Polygon, ...]:
    """One frame's `plate_masks` element as polygons (read-only: shared by the frames of a camera);
    ValueError names what is wrong (a refusal is not kept)."""
    if not data:
        return ()
    if len(data) > MAX_MASKS_BYTES:
        raise ValueError(f"plate_masks: {len(data)} bytes for one frame, more than {MAX_MASKS_BYTES}")
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"plate_masks: not JSON ({error})") from None
    if not isinstance(value, list) or len(value) > MAX_POLYGONS:
        raise ValueError(f"plate_masks: expected a list of at most {MAX_POLYGONS} polygons")
    polygons = []
    for index, polygon in enumerate(value):
        try:
            points = np.asarray(polygon, dtype=np.float64)
        except (TypeError, ValueError):
            points = np.zeros((0,))
        if points.ndim != 2 or points.shape[1] != 2 or not 3 <= len(points) <= MAX_POINTS:
            raise ValueError(f"plate_masks: polygon {index} is not a list of 3 to {MAX_POINTS} [x, y] points")
        if not np.all((points >= 0) & (points <= 1)):
            raise ValueError(f"plate_masks: polygon {index} has coordinates outside 0..1")
        points.setflags(write=False)
        polygons.append(points)
    return tuple(polygons)


def inside_polygon(xs: np.ndarray, ys: np.ndarray, polygon: Polygon) -> np.ndarray:
    """Per point, whether (x, y) lies inside `polygon` (even-odd, half-open edges)."""
    inside = np.zeros(len(xs), dtype=bool)
    previous = polygon[-1]
    for point in polygon:
        (x1, y1), (x2, y2) = point, previous
        if y1 != y2:
            straddles = (y1 > ys) != (y2 > ys)
            crossing = (x2 - x1) * (ys - y1) / (y2 - y1) + x1
            inside ^= straddles & (xs < crossing)
        previous = point
    return inside


def masked_plates(boxes: np.ndarray, polygons: Sequence[Polygon], width: int, height: int) -> np.ndarray:
    """Per box ([x1, y1, x2, y2] in the pixels of a width x height frame), whether its centre lies
    inside any of the normalised `polygons`."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    masked = np.zeros(len(boxes), dtype=bool)
    if not polygons or not len(boxes):
        return masked
    xs = (boxes[:, 0] + boxes[:, 2]) / 2 / width
    ys = (boxes[:, 1] + boxes[:, 3]) / 2 / height
    for polygon in polygons:
        masked |= inside_polygon(xs, ys, polygon)
    return masked
