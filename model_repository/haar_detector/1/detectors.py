"""The Haar plate detector behind `haar_detector`: no Triton import, so unit tests load this file directly.

It takes one BGR uint8 image and returns boxes [N, 4] float32 (x1, y1, x2, y2 in that image's
pixels) and scores [N] float32 in 0..1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import cv2
import numpy as np

HAAR_CASCADE = "haarcascade_russian_plate_number.xml"


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((0, 4), np.float32), np.zeros((0,), np.float32)


class HaarDetector:
    """OpenCV's Russian-plate Haar cascade, run on the image resized to `working_width`.

    The cascade's smallest window is 60x20 px, so small plates are only found after upscaling:
    the working width (up- or down-scaling) trades recall against CPU time.
    Score: the logistic function of the cascade's final-stage level weight (detectMultiScale3),
    monotonic in the cascade's certainty but not a calibrated probability.
    """

    def __init__(
        self,
        cascade_path: str,
        working_width: int = 1280,
        scale_factor: float = 1.1,
        min_neighbors: int = 3,
        min_size: tuple[int, int] = (0, 0),
    ) -> None:
        self.classifier = cv2.CascadeClassifier(cascade_path)
        if self.classifier.empty():
            raise ValueError(f"cannot load Haar cascade {cascade_path}")
        self.working_width = working_width
        self.scale_factor = scale_factor
        self.min_neighbors = min_neighbors
        self.min_size = min_size

    def detect(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        height, width = image.shape[:2]
        scale = self.working_width / width
        size = (self.working_width, max(1, round(height * scale)))
        interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        gray = cv2.cvtColor(cv2.resize(image, size, interpolation=interpolation), cv2.COLOR_BGR2GRAY)
        rects, _, weights = self.classifier.detectMultiScale3(
            gray,
            scaleFactor=self.scale_factor,
            minNeighbors=self.min_neighbors,
            minSize=self.min_size,
            outputRejectLevels=True,
        )
        if len(rects) == 0:
            return _empty()
        rects = np.asarray(rects, np.float32).reshape(-1, 4) / scale
        boxes = np.concatenate([rects[:, :2], rects[:, :2] + rects[:, 2:]], axis=1)
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, width)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, height)
        scores = 1.0 / (1.0 + np.exp(-np.asarray(weights, np.float64).reshape(-1)))
        return boxes.astype(np.float32), scores.astype(np.float32)


def make_detector(parameters: Mapping[str, str]) -> HaarDetector:
    """The Haar detector the model config's parameters describe (defaults where one is absent)."""
    cascade = parameters.get("cascade_path") or str(Path(cv2.data.haarcascades) / HAAR_CASCADE)
    return HaarDetector(
        cascade,
        working_width=int(parameters.get("working_width", 1280)),
        scale_factor=float(parameters.get("scale_factor", 1.1)),
        min_neighbors=int(parameters.get("min_neighbors", 3)),
        min_size=(int(parameters.get("min_width", 0)), int(parameters.get("min_height", 0))),
    )
