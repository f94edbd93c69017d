"""The YOLOv5-family plate detector's pre- and post-processing: no Triton import (unit-tested directly).

The detector (`plate_detector`, see MODELS.md of the weights) sees a 640x640 letterbox of a frame and
answers one row per anchor: `cx, cy, w, h, objectness, 4 corners (x, y), p(single row), p(double row)`
in letterbox pixels. Each frame is shown to it at several scales (`scales`: the fraction of the
canvas the frame fills), because plates that fill much of a photo are missed at full scale and
found at 0.75 (measured on ../shared/evalset: boxes_only 126 -> 128 of 134 plates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

INPUT_SIZE = 640
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


def letterbox(
    image: np.ndarray, fraction: float = 1.0, size: int = INPUT_SIZE
) -> tuple[np.ndarray, Placement]:
    """The frame resized (aspect kept) to fill `fraction` of a size x size canvas, centred, black around.

    Downscaling uses area averaging: with it the detector found 61 instead of 60 of the 62 plates of
    evalset/scenes (bilinear aliases the small characters away).
    """
    height, width = image.shape[:2]
    scale = min(size * fraction / width, size * fraction / height)
    new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
    left, top = (size - new_w) // 2, (size - new_h) // 2
    canvas = np.full((size, size, 3), PAD_VALUE, np.uint8)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    canvas[top : top + new_h, left : left + new_w] = cv2.resize(
        image, (new_w, new_h), interpolation=interpolation
    )
    return canvas, Placement(scale, left, top)


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


def canvases_for(images: list[np.ndarray], scales: tuple[float, ...]) -> tuple[np.ndarray, list[Placement]]:
    """All frames at all scales as one uint8 batch [len(images) * len(scales), 640, 640, 3]."""
    batch = np.empty((len(images) * len(scales), INPUT_SIZE, INPUT_SIZE, 3), np.uint8)
    placements = []
    for i, (image, fraction) in enumerate((image, fraction) for image in images for fraction in scales):
        batch[i], placement = letterbox(image, fraction)
        placements.append(placement)
    return batch, placements


def frame_detections(
    outputs: np.ndarray,
    placements: list[Placement],
    sizes: list[tuple[int, int]],
    scales: int,
    threshold: float,
    iou_threshold: float,
) -> list[Detections]:
    """One `Detections` per frame from the detector's outputs for `canvases_for`'s batch."""
    result = []
    for frame, (width, height) in enumerate(sizes):
        views = range(frame * scales, (frame + 1) * scales)
        found = [decode(outputs[v], placements[v], width, height, threshold) for v in views]
        result.append(suppress(Detections.concatenate(found), iou_threshold))
    return result


def parse_scales(text: str) -> tuple[float, ...]:
    """`"1.0,0.75"` -> (1.0, 0.75); each in (0, 1]."""
    scales = tuple(float(part) for part in text.split(",") if part.strip())
    if not scales or any(not (0 < s <= 1) or math.isnan(s) for s in scales):
        raise ValueError(f"detector_scales must be fractions in (0, 1], got {text!r}")
    return scales
