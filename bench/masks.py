"""`bench sightings --masks`: a camera's masks over everything outside its vehicle's pass.

The region kept is the bounding box of every labelled plate box over all the pass's frames,
grown by `MARGIN` of the largest plate's width (left/right) and height (above/below) and clipped
to the frame; the masks are the bands around it (above, below, left, right), each a rectangle in
coordinates normalised to the frame, empty bands left out. Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.passes import Box, ScenePass
from stream_worker.contracts.cameras import CameraSettings

MARGIN = 0.5  # of the largest plate's width and height, on each side of the plates' track

Polygon = tuple[tuple[float, float], ...]


def kept_region(boxes: Iterable[Box], width: int, height: int, margin: float = MARGIN) -> Box | None:
    """The plates' track (pixels) grown by `margin` plate sizes and clipped to the frame; None
    without boxes."""
    boxes = list(boxes)
    if not boxes:
        return None
    grow_x = margin * max(b[2] - b[0] for b in boxes)
    grow_y = margin * max(b[3] - b[1] for b in boxes)
    return (
        max(0.0, min(b[0] for b in boxes) - grow_x),
        max(0.0, min(b[1] for b in boxes) - grow_y),
        min(float(width), max(b[2] for b in boxes) + grow_x),
        min(float(height), max(b[3] for b in boxes) + grow_y),
    )


def mask_polygons(region: Box, width: int, height: int) -> list[Polygon]:
    """The up to 4 bands of the frame around `region` (pixels), as normalised rectangles."""
    x1, y1, x2, y2 = region[0] / width, region[1] / height, region[2] / width, region[3] / height
    x1, x2 = max(0.0, min(1.0, x1)), max(0.0, min(1.0, x2))
    y1, y2 = max(0.0, min(1.0, y1)), max(0.0, min(1.0, y2))
    bands = [
        (0.0, 0.0, 1.0, y1),  # above
        (0.0, y2, 1.0, 1.0),  # below
        (0.0, y1, x1, y2),  # left
        (x2, y1, 1.0, y2),  # right
    ]
    return [_rectangle(*band) for band in bands if band[2] > band[0] and band[3] > band[1]]


def pass_region(scene: ScenePass, margin: float = MARGIN) -> Box | None:
    """The region kept for a pass: its labelled plates' track, see `kept_region`."""
    width, height = scene.size
    return kept_region((box for frame in scene.frames for box in frame.boxes), width, height, margin)


def pass_settings(scene: ScenePass, margin: float = MARGIN) -> CameraSettings:
    """Settings of the pass's own camera: masks over the frame outside its kept region."""
    region = pass_region(scene, margin)
    if region is None:
        return CameraSettings()
    width, height = scene.size
    return CameraSettings(masks=tuple(mask_polygons(region, width, height)))


def inside(region: Box, box: Box) -> bool:
    """Whether the centre of `box` lies in `region` (edges included)."""
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return region[0] <= x <= region[2] and region[1] <= y <= region[3]


def _rectangle(x1: float, y1: float, x2: float, y2: float) -> Polygon:
    return ((x1, y1), (x2, y1), (x2, y2), (x1, y2))
