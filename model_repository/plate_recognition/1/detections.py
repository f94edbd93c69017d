"""The YOLOv5-family plate detector's pre- and post-processing: no Triton import (unit-tested directly).

The detector (`plate_detector`, see MODELS.md of the weights) sees a letterbox of a frame and answers
its best rows, best first: `cx, cy, w, h, objectness, 4 corners (x, y), p(single row), p(double
row)` in canvas pixels. A canvas has the frame's aspect, its long side 640 pixels at scale 1.0,
with a black margin around the frame and both sides on the network's stride (32; `canvas_layout`):
a 1920x1080 frame becomes 640x512 at scale 1.0 and 320x192 at 0.5, 0.95 of a 640x640 square
instead of one square per scale. Each frame is shown at several scales
(`scales`: the fraction of 640 its long side fills), because plates that fill much of a photo are
missed at full scale and found at 0.5 (measured on ../shared/evalset: boxes_only 126 -> 128 of 134
plates). Canvases of one shape go to the detector as one batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

INPUT_SIZE = 640  # a canvas's long side at scale 1.0
STRIDE = 32  # canvas sides are multiples of the detector's coarsest stride
PAD_VALUE = 0  # the detector was trained on black letterbox bands
ROW_WIDTH = 15  # cx, cy, w, h, objectness, 8 corner coordinates, 2 layout probabilities
SINGLE_ROW, DOUBLE_ROW = "single_row", "double_row"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a frame sits in its letterbox canvas: canvas = frame * scale + (left, top)."""

    scale: float
    left: int
    top: int


@dataclass(frozen=True, slots=True)
class Detections:
    """A frame's plates in its own pixels; arrays share their first axis."""

    boxes: np.ndarray  # [K, 4] float32 x1, y1, x2, y2
    corners: np.ndarray  # [K, 4, 2] float32: top-left, top-right, bottom-right, bottom-left
    scores: np.ndarray  # [K] float32 objectness x layout probability
    double_row: np.ndarray  # [K] bool

    def __len__(self) -> int:
        return len(self.scores)

    @staticmethod
    def empty() -> Detections:
        return Detections(
            np.zeros((0, 4), np.float32),
            np.zeros((0, 4, 2), np.float32),
            np.zeros(0, np.float32),
            np.zeros(0, bool),
        )

    @staticmethod
    def concatenate(parts: list[Detections]) -> Detections:
        if not parts:
            return Detections.empty()
        return Detections(
            np.concatenate([p.boxes for p in parts]),
            np.concatenate([p.corners for p in parts]),
            np.concatenate([p.scores for p in parts]),
            np.concatenate([p.double_row for p in parts]),
        )

    def scaled(self, x: float, y: float) -> Detections:
        """In the pixels of the same frame at another scale (a frame decoded at reduced size)."""
        factor = np.array([x, y], np.float32)
        boxes = (self.boxes.reshape(-1, 2, 2) * factor).reshape(-1, 4)
        return Detections(boxes, self.corners * factor, self.scores, self.double_row)

    def take(self, indices: np.ndarray) -> Detections:
        return Detections(
            self.boxes[indices], self.corners[indices], self.scores[indices], self.double_row[indices]
        )


def canvas_layout(
    width: int, height: int, fraction: float = 1.0, margin: int = 0, size: int = INPUT_SIZE
) -> tuple[tuple[int, int], tuple[int, int], Placement]:
    """Where a width x height frame goes at `fraction`: the canvas's (width, height), the resized
    frame's (width, height) and its placement. The frame's long side fills `fraction` of `size`;
    above 1.0 it fills a square of `fraction` x `size` (for small, distant plates: MAX_SCALE).

    The canvas is the size x size letterbox the detector was trained on, cropped to the frame plus
    `margin` pixels of its black border on each side (where the square had them), at multiples of
    STRIDE: the frame keeps its offset modulo STRIDE, so every level of the network sees it on the
    same grid as in the square canvas. The margin keeps plates at the frame's edge found: the
    detector scores them lower without black around them. Measured on ../shared/evalset (plates
    found of boxes_only's 134; exact sightings of `bench sightings`' 59): tight canvases 127; scales
    1.0 and 0.75 with 64 pixels at both (1.5 squares for 16:9) 128 and 54; 1.0 and 0.5 with 64 and
    32 (640x512 and 384x256, 1.04 squares) 128 and 55; 64 and 0 (the default: 640x512 and 320x192,
    0.95 squares; 0.85x the floor's CPU per frame) 128 and 55, exact frames 381 of 472 instead of
    383; 32 pixels at scale 1.0: 127. Scenes: 62/62 found and 57/61 exact with each of them.
    """
    scale = min(size * fraction / width, size * fraction / height)
    new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
    square = max(size, math.ceil(size * fraction / STRIDE) * STRIDE)  # above 1.0, a larger square

    def crop(length: int) -> tuple[int, int]:
        square_offset = (square - length) // 2
        start = max(0, square_offset - margin) // STRIDE * STRIDE
        end = min(square, square_offset + length + margin)
        return square_offset - start, -(-(end - start) // STRIDE) * STRIDE

    (left, canvas_w), (top, canvas_h) = crop(new_w), crop(new_h)
    return (canvas_w, canvas_h), (new_w, new_h), Placement(scale, left, top)


def resize_into(image: np.ndarray, target: np.ndarray) -> None:
    """`image` resized to fill `target` (a view into a canvas), written in place.

    Downscaling uses area averaging: with it the detector found 61 instead of 60 of the 62 plates of
    evalset/scenes (bilinear aliases the small characters away).
    """
    height, width = target.shape[:2]
    if _two_thirds(image, target):
        _area_two_thirds_into(image, target)
        return
    interpolation = cv2.INTER_AREA if width < image.shape[1] else cv2.INTER_LINEAR
    _land_in(target, cv2.resize(image, (width, height), dst=target, interpolation=interpolation))


def _land_in(target: np.ndarray, written: np.ndarray) -> None:
    """Make sure what OpenCV wrote with `dst=target` is in `target` (it could write elsewhere:
    never seen, kept correct)."""
    if not np.shares_memory(written, target):
        target[...] = written


def _two_thirds(image: np.ndarray, target: np.ndarray) -> bool:
    """Whether `target` is `image` at exactly 2/3 (a 1080p or 4K frame's 960x540 decode at scale 1.0)."""
    (height, width), (target_h, target_w) = image.shape[:2], target.shape[:2]
    return (
        image.dtype == np.uint8
        and image.ndim == 3
        and image.shape[2] == 3
        and height % 3 == 0
        and width % 3 == 0
        and (target_h, target_w) == (height // 3 * 2, width // 3 * 2)
    )


def _thirds_to_halves(rows: np.ndarray) -> np.ndarray:
    """Every 3 rows to 2: 2a + b and b + 2c, in uint16 (each output row covers 1.5 input rows)."""
    groups = rows.reshape(rows.shape[0] // 3, 3, -1)
    out = np.empty((groups.shape[0], 2, groups.shape[2]), np.uint16)
    first, second = out[:, 0], out[:, 1]
    np.add(groups[:, 0], groups[:, 0], out=first, dtype=np.uint16)
    np.add(first, groups[:, 1], out=first)
    np.add(groups[:, 2], groups[:, 2], out=second, dtype=np.uint16)
    np.add(second, groups[:, 1], out=second)
    return out.reshape(2 * groups.shape[0], *rows.shape[1:])


def _area_two_thirds_into(image: np.ndarray, target: np.ndarray) -> None:
    """OpenCV's INTER_AREA at 2/3, pixel for pixel, in 0.63x its CPU (1.21 against 1.93 ms for
    960x540; the letterbox of a 1080p frame at both scales: 0.80x, 1.70 against 2.12 ms).

    Each output pixel is (4a + 2b + 2c + d) / 9 of a 2x2 corner of a 3x3 block, summed in integers
    by whole rows (the rows, then the transposed columns). k/9 is never halfway between two
    integers, so rounding the exact sum gives what OpenCV's float weights round to: the canvases
    of 602 frames of ../shared (304 of them through this path) were identical to the bit."""
    columns = _thirds_to_halves(cv2.transpose(_thirds_to_halves(image)))
    _land_in(target, cv2.transpose(cv2.convertScaleAbs(columns, alpha=1 / 9), dst=target))


def decode(rows: np.ndarray, placement: Placement, width: int, height: int, threshold: float) -> Detections:
    """The rows scoring above `threshold`, mapped back to the frame's pixels (boxes clipped to it)."""
    rows = np.asarray(rows, np.float32).reshape(-1, ROW_WIDTH)
    scores = rows[:, 4] * rows[:, 13:15].max(axis=1)
    rows, scores = rows[scores > threshold], scores[scores > threshold]
    offset = np.array([placement.left, placement.top], np.float32)
    centres = (rows[:, 0:2] - offset) / placement.scale
    halves = rows[:, 2:4] / placement.scale / 2
    boxes = np.concatenate([centres - halves, centres + halves], axis=1)
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, width)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, height)
    corners = (rows[:, 5:13].reshape(-1, 4, 2) - offset) / placement.scale
    return Detections(boxes, corners.astype(np.float32), scores.astype(np.float32), rows[:, 14] > rows[:, 13])


def suppress(detections: Detections, iou_threshold: float) -> Detections:
    """Non-maximum suppression over all scales of a frame, best score first."""
    if not len(detections):
        return detections
    xywh = np.concatenate(
        [detections.boxes[:, :2], detections.boxes[:, 2:] - detections.boxes[:, :2]], axis=1
    )
    kept = cv2.dnn.NMSBoxes(xywh.tolist(), detections.scores.tolist(), 0.0, iou_threshold)
    return detections.take(np.asarray(kept, np.int64).reshape(-1))


def box_corners(box: np.ndarray) -> np.ndarray:
    """The corners of an axis-aligned box, for detectors that know no better (Haar)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)


def _quad_area(corners: np.ndarray) -> float:
    x, y = corners[:, 0].astype(np.float64), corners[:, 1].astype(np.float64)
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def usable_corners(corners: np.ndarray, box: np.ndarray) -> np.ndarray:
    """The detector's corners, or the box's when they are degenerate (a warp needs a real quad)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    if not np.isfinite(corners).all() or _quad_area(corners) < max(1.0, 0.1 * (x2 - x1) * (y2 - y1)):
        return box_corners(box)
    return corners


@dataclass(frozen=True, slots=True)
class CanvasBatch:
    """Canvases of one shape, for one detector request; `views[i]` is canvas i's view index (frame
    index x number of scales + scale index)."""

    pixels: np.ndarray  # [N, height, width, 3] uint8
    views: list[int]


class Canvases:
    """Every frame of a micro-batch at every scale, in canvases grouped by shape (one detector
    request per shape), and each view's placement.

    Each canvas is written once, in place: a frame is resized straight into its batch (no full-size
    canvas, no copy). A smaller scale is resized from the larger one's pixels when that was a
    downscale: one pass over the full frame per frame, not one per scale (no plate of evalset
    found or read differently). `draw` may run for several frames at once (separate memory).
    """

    def __init__(
        self, sizes: Sequence[tuple[int, int]], scales: Sequence[float], margins: Sequence[int]
    ) -> None:
        self.scales = tuple(scales)
        self.layouts = [
            canvas_layout(width, height, fraction, margin)
            for width, height in sizes
            for fraction, margin in zip(scales, margins, strict=True)
        ]
        shapes: dict[tuple[int, int], list[int]] = {}
        for view, (canvas_size, _, _) in enumerate(self.layouts):
            shapes.setdefault(canvas_size, []).append(view)
        self.batches = [
            CanvasBatch(np.full((len(views), h, w, 3), PAD_VALUE, np.uint8), views)
            for (w, h), views in shapes.items()
        ]
        self.slots = {view: (batch, i) for batch in self.batches for i, view in enumerate(batch.views)}
        self.placements = [placement for _, _, placement in self.layouts]
        self.largest_first = sorted(range(len(self.scales)), key=lambda s: -self.scales[s])

    def draw(self, frame: int, image: np.ndarray) -> None:
        """Resize frame `frame` into its canvases."""
        source = image
        for s in self.largest_first:
            view = frame * len(self.scales) + s
            _, (new_w, new_h), placement = self.layouts[view]
            batch, i = self.slots[view]
            target = batch.pixels[
                i, placement.top : placement.top + new_h, placement.left : placement.left + new_w
            ]
            resize_into(source, target)
            if placement.scale < 1:
                source = target

    @property
    def pixels(self) -> int:
        """Canvas pixels in all (what the detector's work grows with)."""
        return sum(
            batch.pixels.shape[0] * batch.pixels.shape[1] * batch.pixels.shape[2] for batch in self.batches
        )


def canvases_for(images: list[np.ndarray], scales: Sequence[float], margins: Sequence[int]) -> Canvases:
    """`Canvases` of these frames, drawn."""
    canvases = Canvases([(image.shape[1], image.shape[0]) for image in images], scales, margins)
    for frame, image in enumerate(images):
        canvases.draw(frame, image)
    return canvases


def frame_detections(
    outputs: Sequence[np.ndarray],
    placements: list[Placement],
    sizes: list[tuple[int, int]],
    scales: int,
    threshold: float,
    iou_threshold: float,
) -> list[Detections]:
    """One `Detections` per frame from the detector's rows for each view (`canvases_for`)."""
    result = []
    for frame, (width, height) in enumerate(sizes):
        views = range(frame * scales, (frame + 1) * scales)
        found = [decode(outputs[v], placements[v], width, height, threshold) for v in views]
        result.append(suppress(Detections.concatenate(found), iou_threshold))
    return result


# What config.pbtxt sets (chosen on ../shared/evalset, see canvas_layout); used where it is silent.
DEFAULT_SCALES = "1.0,0.5"
DEFAULT_MARGINS = "64,0"
# Scales above 1.0 show the frame larger than 640 pixels, for dash cameras' small, distant plates
# (54-112 px wide in 1280x720 frames): ../shared/plates-world/ro-scenes, recall at IoU 0.3 found
# in-process: 1.0,0.5 29/37; 2.0,0.5 35/37; 3.0,0.5 37/37 (6.4x the detector's CPU per frame).
# 4.0 (a 2560-pixel square) bounds a canvas's memory.
MAX_SCALE = 4.0
MAX_SCALES = 4  # views per frame: each is a detector run
# Black pixels kept around a frame at a scale of 1.0 or more that the model's own scales lack.
EXTRA_SCALE_MARGIN = 64


def parse_margins(text: str, scales: int) -> tuple[int, ...]:
    """`"64,32"` -> (64, 32): one margin in pixels per scale of `detector_scales`."""
    margins = tuple(int(part) for part in text.split(",") if part.strip())
    if len(margins) != scales or any(m < 0 for m in margins):
        raise ValueError(f"detector_margins must be {scales} pixel counts >= 0 (one per scale), got {text!r}")
    return margins


def parse_scales(text: str) -> tuple[float, ...]:
    """`"1.0,0.5"` -> (1.0, 0.5); each in (0, MAX_SCALE]."""
    try:
        scales = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        scales = ()
    if not 0 < len(scales) <= MAX_SCALES or any(not (0 < s <= MAX_SCALE) or math.isnan(s) for s in scales):
        raise ValueError(
            f"detector_scales must be 1 to {MAX_SCALES} numbers in (0, {MAX_SCALE:g}], comma-separated; "
            f"got {text[:64]!r}"
        )
    return scales


def frame_scales(
    values: Sequence[bytes] | None, frames: int, scales: tuple[float, ...], margins: tuple[int, ...]
) -> list[tuple[tuple[float, ...], tuple[int, ...]]]:
    """The optional `detector_scales` input as (scales, margins) per frame; b"" or no input: the
    model's own. A scale the model has keeps its margin; another gets EXTRA_SCALE_MARGIN pixels from
    1.0 up (as scale 1.0 by default), none below. ValueError with the reason for a bad value."""
    if values is None:
        return [(scales, margins)] * frames
    if len(values) != frames:
        raise ValueError(f"detector_scales has {len(values)} values for {frames} frames")
    own = dict(zip(scales, margins, strict=True))
    result = []
    for frame, value in enumerate(values):
        text = bytes(value).decode("utf-8", errors="replace").strip()
        if not text:
            result.append((scales, margins))
            continue
        try:
            asked = parse_scales(text)
        except ValueError as error:
            raise ValueError(f"detector_scales: frame {frame}: {error}") from None
        result.append((asked, tuple(own.get(s, EXTRA_SCALE_MARGIN if s >= 1 else 0) for s in asked)))
    return result
