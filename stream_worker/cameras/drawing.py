"""Drawing a camera's masks and zones over one of its frames, so that an operator sees what the
settings cover before (or after) setting them: `stream-worker cameras draw`.

Pure numpy/OpenCV, no Kafka. Masks are filled dark red, semi-transparent, and outlined (where
plates are ignored); each zone is outlined in its own colour with its name on a label inside it
near its first point. Polygons are scaled from 0..1 to the image exactly as the worker scales them
(x * width, y * height), clamped to the last pixel so that an edge on the border stays visible.
The sizes follow `recognize --annotate` (stream_worker/tools/recognize.py) so the two look alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

import numpy as np

from stream_worker.contracts.cameras import CameraSettings
from stream_worker.media import opencv

MASK_COLOUR = (0, 0, 160)  # BGR dark red: "not here", distinct from recognize's green plate boxes
MASK_ALPHA = 0.4  # enough to see the mask, little enough to see the scene under it
# BGR, one per zone in order (repeating after the last): bright, far from dark red and from each other.
ZONE_COLOURS = (
    (255, 200, 0),  # azure
    (0, 220, 255),  # amber
    (255, 0, 255),  # magenta
    (0, 255, 0),  # green
    (255, 255, 0),  # cyan
    (0, 128, 255),  # orange
    (255, 255, 255),  # white
    (180, 105, 255),  # pink
)
_SHIFT = 4  # fractional bits for OpenCV's polygon points: sub-pixel placement on small images
_SCALE = 1 << _SHIFT


def _cv2() -> ModuleType:
    return opencv("cameras draw")


def to_bgr(image: np.ndarray) -> np.ndarray:
    """A 3-channel 8-bit BGR copy of a decoded image: grayscale is spread to three channels, an
    alpha channel is composited over white (as image viewers show it), 16-bit is scaled down."""
    if image.ndim not in (2, 3) or image.size == 0:
        raise ValueError(f"not an image: array of shape {image.shape}")
    pixels = image
    if pixels.dtype == np.uint16:
        pixels = (pixels.astype(np.uint32) * 255 // 65535).astype(np.uint8)
    elif pixels.dtype != np.uint8:
        raise ValueError(f"unsupported pixel type {pixels.dtype} (8- or 16-bit images only)")
    if pixels.ndim == 2:
        pixels = pixels[:, :, np.newaxis]
    channels = pixels.shape[2]
    if channels == 1:
        return np.repeat(pixels, 3, axis=2)
    if channels == 2:  # grayscale + alpha
        pixels = np.concatenate([np.repeat(pixels[:, :, :1], 3, axis=2), pixels[:, :, 1:]], axis=2)
        channels = 4
    if channels == 3:
        return pixels.copy()
    if channels == 4:
        alpha = pixels[:, :, 3:4].astype(np.float32) / 255.0
        blended = pixels[:, :, :3].astype(np.float32) * alpha + 255.0 * (1.0 - alpha)
        return np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    raise ValueError(f"unsupported image with {channels} channels")


def scale_polygon(polygon: Sequence[Sequence[float]], width: int, height: int) -> np.ndarray:
    """The polygon in OpenCV's fixed-point pixels (`_SHIFT` fractional bits), int32 of shape (n, 2)."""
    points = np.asarray(polygon, dtype=np.float64).reshape(-1, 2) * (width, height)
    points = np.clip(points, 0, (width - 1, height - 1))
    return np.rint(points * _SCALE).astype(np.int32)


def zone_colour(index: int) -> tuple[int, int, int]:
    """The BGR colour of the zone at `index` in the settings (the palette repeats)."""
    return ZONE_COLOURS[index % len(ZONE_COLOURS)]


def draw_settings(image: np.ndarray, settings: CameraSettings) -> np.ndarray:
    """A BGR copy of `image` (any size; grayscale or with alpha converted by `to_bgr`) with the
    settings' masks and zones drawn over it; the input is left untouched."""
    cv2 = _cv2()
    canvas = to_bgr(image)
    height, width = canvas.shape[:2]
    thickness = max(2, round(min(width, height) / 300))
    masks = [scale_polygon(mask, width, height) for mask in settings.masks]
    if masks:
        covered = np.zeros((height, width), dtype=np.uint8)
        for mask in masks:  # one by one: given several, fillPoly leaves their overlap (even-odd) empty
            cv2.fillPoly(covered, [mask], 255, cv2.LINE_8, _SHIFT)
        inside = covered.astype(bool)
        tint = np.asarray(MASK_COLOUR, dtype=np.float32)
        # One blend for the union, so overlapping masks are not darkened twice.
        canvas[inside] = np.rint(canvas[inside] * (1.0 - MASK_ALPHA) + tint * MASK_ALPHA).astype(np.uint8)
        cv2.polylines(canvas, masks, True, MASK_COLOUR, thickness, cv2.LINE_AA, _SHIFT)
    for index, zone in enumerate(settings.zones):
        points = scale_polygon(zone.polygon, width, height)
        colour = zone_colour(index)
        cv2.polylines(canvas, [points], True, colour, thickness, cv2.LINE_AA, _SHIFT)
        _label(cv2, canvas, zone.name, points, colour, thickness)
    return canvas


def _label(
    cv2: ModuleType,
    canvas: np.ndarray,
    text: str,
    points: np.ndarray,
    colour: tuple[int, int, int],
    thickness: int,
) -> None:
    """The zone's name on a box of its colour at its first point, extending towards the polygon's
    middle (so inside it for the usual convex zones), and kept within the image."""
    height, width = canvas.shape[:2]
    font = cv2.FONT_HERSHEY_SIMPLEX
    font_scale = max(0.5, min(width, height) / 900)
    (text_w, text_h), baseline = cv2.getTextSize(text, font, font_scale, thickness=1)
    box_w, box_h = text_w + 2 * thickness, text_h + baseline + 2 * thickness
    first = points[0] / _SCALE
    middle = points.mean(axis=0) / _SCALE
    gap = thickness + 1  # clear of the outline
    left = first[0] + gap if middle[0] >= first[0] else first[0] - gap - box_w
    top = first[1] + gap if middle[1] >= first[1] else first[1] - gap - box_h
    left = int(min(max(0, round(left)), max(0, width - box_w)))
    top = int(min(max(0, round(top)), max(0, height - box_h)))
    cv2.rectangle(canvas, (left, top), (left + box_w, top + box_h), colour, -1)
    # Dark text on light labels, white on dark ones (BGR luma).
    luma = 0.114 * colour[0] + 0.587 * colour[1] + 0.299 * colour[2]
    text_colour = (0, 0, 0) if luma >= 128 else (255, 255, 255)
    cv2.putText(
        canvas,
        text,
        (left + thickness, top + thickness + text_h),
        font,
        font_scale,
        text_colour,
        1,
        cv2.LINE_AA,
    )
