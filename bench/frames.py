"""The benchmark's input: camera-like 1920x1080 JPEG frames made in memory from the sample photos.

Made at run time, never stored: the photos stay in ../shared (they may not be copied into git).
Small crops at different offsets make several distinct frames of the plate-carrying street photo
(so no cache can serve a repeat), and the cat photo gives frames without plates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

CAMERA_WIDTH, CAMERA_HEIGHT = 1920, 1080
JPEG_QUALITY = 85  # typical of IP cameras' 1080p snapshots: ~300 KB per frame here
# (left, top) offsets as fractions of the photo, with a 96% crop: the van's plate stays in view.
CAR_OFFSETS = ((0.0, 0.04), (0.01, 0.03), (0.02, 0.02), (0.03, 0.01), (0.04, 0.0), (0.02, 0.04))
CROP = 0.96


@dataclass(frozen=True)
class BenchFrame:
    name: str
    jpeg: bytes
    has_plate: bool


def _camera_jpeg(image: np.ndarray) -> bytes:
    resized = cv2.resize(image, (CAMERA_WIDTH, CAMERA_HEIGHT), interpolation=cv2.INTER_CUBIC)
    ok, buffer = cv2.imencode(".jpg", resized, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("OpenCV could not JPEG-encode a benchmark frame")
    return buffer.tobytes()


def crop_view(image: np.ndarray, left: float, top: float) -> np.ndarray:
    height, width = image.shape[:2]
    x, y = round(left * width), round(top * height)
    return image[y : y + round(CROP * height), x : x + round(CROP * width)]


def _read(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise FileNotFoundError(f"benchmark sample {path} is missing or unreadable (set LPR_WEIGHTS_DIR)")
    return image


def camera_frames(samples_dir: Path) -> list[BenchFrame]:
    """The distinct frames, in the order a run cycles through them (3 of 4 carry a plate)."""
    car = _read(samples_dir / "car.jpg")
    cat = _read(samples_dir / "cat.jpeg")
    cars = [
        BenchFrame(f"car-{i}", _camera_jpeg(crop_view(car, left, top)), True)
        for i, (left, top) in enumerate(CAR_OFFSETS)
    ]
    cats = [BenchFrame(f"cat-{i}", _camera_jpeg(image), False) for i, image in enumerate((cat, cat[:, ::-1]))]
    return [*cars[:3], cats[0], *cars[3:], cats[1]]


def cycle(frames: list[BenchFrame], count: int) -> list[BenchFrame]:
    """`count` frames, repeating the distinct ones in order."""
    return [frames[i % len(frames)] for i in range(count)]


def samples_dir() -> Path:
    """Where the sample photos lie: beside the weights ($LPR_WEIGHTS_DIR/..), else ../shared/samples."""
    repo_root = Path(__file__).resolve().parent.parent
    weights = Path(os.environ.get("LPR_WEIGHTS_DIR", repo_root.parent / "shared" / "weights"))
    return weights.resolve().parent / "samples"
