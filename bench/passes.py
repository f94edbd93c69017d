"""Vehicle passes made from still photos: each labelled photo becomes a short frame sequence.

A camera sees a passing plate grow or shrink and drift across the image, each frame a new JPEG
with its own noise. So each pass is a sequence of affine views of one photo (scale about the
labelled plates' centre and a translation, both moving steadily over the pass with a little
frame-to-frame jitter), each with a little sensor noise and compressed at a random JPEG quality.
The labelled boxes are carried through the same transforms, so every frame can be scored.

Kinds: `approaching` (scale `min_scale` -> 1.0, drifting down), `receding` (the reverse), `left`
and `right` (the plates cross 1.6 plate widths at a constant scale halfway). Each frame is also
blurred along the travel, as by a shutter open while the vehicle moves (`Difficulty`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from stream_worker.contracts import Direction

Box = tuple[float, float, float, float]
KINDS = (Direction.APPROACHING, Direction.RECEDING, Direction.LEFT, Direction.RIGHT)
JITTER_PX = 3.0  # frame-to-frame position jitter
JITTER_SCALE = 0.015
LATERAL_WIDTHS = 1.6  # how far a left/right pass moves its plates, in plate widths


@dataclass(frozen=True)
class Difficulty:
    """How hard a pass's frames are to read."""

    min_scale: float = 0.45  # the plates' smallest size in a pass, relative to the photo's
    jpeg_quality: tuple[int, int] = (20, 50)  # each frame's quality, uniform in this range
    max_blur_px: int = 5  # motion blur along the travel, its length uniform in 1..this
    noise_sigma: float = 4.0  # Gaussian sensor noise, grey levels


@dataclass(frozen=True)
class PassFrame:
    jpeg: bytes
    boxes: list[Box]  # the labelled plates, in this frame's pixels


@dataclass(frozen=True)
class ScenePass:
    name: str  # the photo
    texts: list[str | None]  # labelled plates, aligned with each frame's boxes
    kind: Direction
    frames: list[PassFrame]
    size: tuple[int, int]  # every frame's width and height, pixels


def _transform(box: Box, matrix: np.ndarray) -> Box:
    x1, y1, x2, y2 = box
    corners = np.array([[x1, y1, 1], [x2, y1, 1], [x2, y2, 1], [x1, y2, 1]], dtype=np.float64)
    moved = corners @ matrix.T
    return (
        float(moved[:, 0].min()),
        float(moved[:, 1].min()),
        float(moved[:, 0].max()),
        float(moved[:, 1].max()),
    )


def _motion_blur(image: np.ndarray, length: int, vertical: bool) -> np.ndarray:
    if length <= 1:
        return image
    kernel = np.full((1, length), 1.0 / length, dtype=np.float32)
    return cv2.filter2D(image, -1, kernel.T if vertical else kernel)


def _schedule(
    kind: Direction, progress: float, plate_width: float, height: int, min_scale: float
) -> tuple[float, float, float]:
    """(scale, dx, dy) at `progress` in [0, 1] of a pass of this kind."""
    if kind == Direction.APPROACHING:
        return min_scale + (1 - min_scale) * progress, 0.0, (progress - 0.5) * 0.08 * height
    if kind == Direction.RECEDING:
        return 1.0 - (1 - min_scale) * progress, 0.0, (0.5 - progress) * 0.08 * height
    scale = (1 + min_scale) / 2
    shift = (progress - 0.5) * LATERAL_WIDTHS * plate_width * scale
    return scale, shift if kind == Direction.RIGHT else -shift, 0.0


def make_pass(
    image: np.ndarray,
    name: str,
    texts: Sequence[str | None],
    boxes: Sequence[Box],
    kind: Direction,
    frames: int,
    seed: int,
    difficulty: Difficulty = Difficulty(),
) -> ScenePass:
    """`frames` views of the BGR `image` as a vehicle pass of `kind` (`boxes`: its labelled plates)."""
    if frames < 2:
        raise ValueError("a pass needs at least 2 frames")
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    height, width = image.shape[:2]
    if boxes:
        cx = sum((b[0] + b[2]) / 2 for b in boxes) / len(boxes)
        cy = sum((b[1] + b[3]) / 2 for b in boxes) / len(boxes)
        plate_width = sum(b[2] - b[0] for b in boxes) / len(boxes)
    else:
        cx, cy, plate_width = width / 2, height / 2, width / 10
    result = []
    for k in range(frames):
        scale, dx, dy = _schedule(kind, k / (frames - 1), plate_width, height, difficulty.min_scale)
        scale *= 1 + rng.uniform(-JITTER_SCALE, JITTER_SCALE)
        dx += rng.uniform(-JITTER_PX, JITTER_PX)
        dy += rng.uniform(-JITTER_PX, JITTER_PX)
        # Scale about the plates' centre, then move: dst = scale * (src - c) + c + (dx, dy).
        matrix = np.array([[scale, 0, (1 - scale) * cx + dx], [0, scale, (1 - scale) * cy + dy]])
        view = cv2.warpAffine(
            image,
            matrix,
            (width, height),
            flags=cv2.INTER_AREA,
            borderMode=cv2.BORDER_CONSTANT,
            borderValue=(110, 110, 110),
        )
        vertical = kind in (Direction.APPROACHING, Direction.RECEDING)
        view = _motion_blur(view, rng.randint(1, max(1, difficulty.max_blur_px)), vertical)
        noisy = view.astype(np.float32) + noise.normal(0, difficulty.noise_sigma, view.shape)
        quality = rng.randint(*difficulty.jpeg_quality)
        ok, encoded = cv2.imencode(
            ".jpg", np.clip(noisy, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, quality]
        )
        if not ok:
            raise ValueError(f"{name}: JPEG encoding failed")
        result.append(PassFrame(encoded.tobytes(), [_transform(box, matrix) for box in boxes]))
    return ScenePass(name, list(texts), kind, result, (width, height))
