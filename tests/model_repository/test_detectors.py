"""haar_detector's Haar cascade without Triton, on the sample photo."""

from __future__ import annotations

import cv2
import numpy as np


def _iou(a: np.ndarray, b: tuple[float, float, float, float]) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_haar_finds_the_sample_plate_in_source_pixels(detectors, car_jpeg: bytes) -> None:
    image = cv2.imdecode(np.frombuffer(car_jpeg, np.uint8), cv2.IMREAD_COLOR)
    boxes, scores = detectors.make_detector({}).detect(image)
    print("haar boxes", boxes.tolist(), "scores", scores.tolist())
    assert len(boxes) == 1
    assert _iou(boxes[0], (94, 331, 132, 342)) >= 0.4
    assert 0.0 < scores[0] < 1.0


def test_haar_on_an_image_without_plates_gives_empty_float32_arrays(detectors, cat_jpeg: bytes) -> None:
    image = cv2.imdecode(np.frombuffer(cat_jpeg, np.uint8), cv2.IMREAD_COLOR)
    boxes, scores = detectors.make_detector({"working_width": "640"}).detect(image)
    assert boxes.shape == (0, 4) and scores.shape == (0,)
    assert boxes.dtype == np.float32 and scores.dtype == np.float32
