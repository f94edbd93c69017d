"""Plate detectors behind `plate_detector`: no Triton import, so unit tests load this file directly.

Both take one BGR uint8 image and return boxes [N, 4] float32 (x1, y1, x2, y2 in that image's
pixels) and scores [N] float32 in 0..1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

HAAR_CASCADE = "haarcascade_russian_plate_number.xml"


class Detector(Protocol):
    def detect(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


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


def letterbox(image: np.ndarray, size: int) -> tuple[np.ndarray, float, tuple[float, float]]:
    """Resize keeping the aspect ratio into a size x size canvas padded with grey (114), centred."""
    height, width = image.shape[:2]
    scale = min(size / width, size / height)
    new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
    pad_x, pad_y = (size - new_w) / 2, (size - new_h) / 2
    canvas = np.full((size, size, 3), 114, np.uint8)
    left, top = math.floor(pad_x), math.floor(pad_y)
    canvas[top : top + new_h, left : left + new_w] = cv2.resize(
        image, (new_w, new_h), interpolation=cv2.INTER_LINEAR
    )
    return canvas, scale, (float(left), float(top))


def decode_yolo(output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (cx, cy, w, h) and scores from a YOLO head, batch of one.

    Layouts: [1, N, C] (YOLOv5 style: cx, cy, w, h, objectness, then optional class scores, score =
    objectness * best class) or [1, C, N] (YOLOv8 style, no objectness: score = best class score),
    told apart by which axis is shorter (C is 5 + classes, N is thousands of anchors).
    """
    prediction = np.asarray(output, np.float32)
    if prediction.ndim == 3:
        prediction = prediction[0]
    if prediction.ndim != 2 or max(prediction.shape) < 5:
        raise ValueError(f"unexpected YOLO output shape {np.shape(output)}")
    if 5 <= prediction.shape[0] < prediction.shape[1]:  # [C, N]: YOLOv8
        rows = prediction.T
        scores = rows[:, 4:].max(axis=1)
    elif prediction.shape[1] >= 5:  # [N, C]: YOLOv5
        rows = prediction
        scores = rows[:, 4] * rows[:, 5:].max(axis=1) if rows.shape[1] > 5 else rows[:, 4]
    else:
        raise ValueError(f"unexpected YOLO output shape {np.shape(output)}")
    return rows[:, :4], scores


def nms(
    boxes_cxcywh: np.ndarray, scores: np.ndarray, score_threshold: float, iou_threshold: float
) -> np.ndarray:
    """Indices kept by OpenCV's NMS, best first."""
    xywh = np.concatenate([boxes_cxcywh[:, :2] - boxes_cxcywh[:, 2:] / 2, boxes_cxcywh[:, 2:]], axis=1)
    kept = cv2.dnn.NMSBoxes(xywh.tolist(), scores.tolist(), score_threshold, iou_threshold)
    return np.asarray(kept, np.int64).reshape(-1)


def undo_letterbox(
    boxes_cxcywh: np.ndarray, scale: float, pad: tuple[float, float], width: int, height: int
) -> np.ndarray:
    """Letterboxed (cx, cy, w, h) -> (x1, y1, x2, y2) in the original image, clipped to it."""
    centre = (boxes_cxcywh[:, :2] - np.asarray(pad, np.float32)) / scale
    half = boxes_cxcywh[:, 2:] / scale / 2
    boxes = np.concatenate([centre - half, centre + half], axis=1)
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, width)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, height)
    return boxes.astype(np.float32)


class YoloOnnxDetector:
    """A user-supplied YOLO-style ONNX plate detector (one image input, RGB 0..1, square letterbox)."""

    def __init__(
        self,
        onnx_path: str,
        input_size: int = 640,
        score_threshold: float = 0.25,
        nms_iou: float = 0.45,
        providers: list[str] | None = None,
        threads: int = 2,
    ) -> None:
        import onnxruntime as ort

        if not Path(onnx_path).is_file():
            raise ValueError(f"plate_detector: onnx_path {onnx_path} does not exist")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            onnx_path, options, providers=providers or ["CPUExecutionProvider"]
        )
        self.input_name = self.session.get_inputs()[0].name
        self.input_size = input_size
        self.score_threshold = score_threshold
        self.nms_iou = nms_iou

    def detect(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        height, width = image.shape[:2]
        canvas, scale, pad = letterbox(image, self.input_size)
        blob = cv2.cvtColor(canvas, cv2.COLOR_BGR2RGB).transpose(2, 0, 1)[None].astype(np.float32) / 255.0
        (output,) = self.session.run(None, {self.input_name: blob})[:1]
        boxes, scores = decode_yolo(output)
        kept = nms(boxes, scores, self.score_threshold, self.nms_iou)
        if kept.size == 0:
            return _empty()
        return undo_letterbox(boxes[kept], scale, pad, width, height), scores[kept].astype(np.float32)


def make_detector(parameters: Mapping[str, str], model_dir: Path) -> Detector:
    """The detector the model config's parameters select (`detector`: haar | yolo_onnx)."""
    kind = parameters.get("detector", "haar")
    if kind == "haar":
        cascade = parameters.get("cascade_path") or str(Path(cv2.data.haarcascades) / HAAR_CASCADE)
        return HaarDetector(
            cascade,
            working_width=int(parameters.get("working_width", 1280)),
            scale_factor=float(parameters.get("scale_factor", 1.1)),
            min_neighbors=int(parameters.get("min_neighbors", 3)),
            min_size=(int(parameters.get("min_width", 0)), int(parameters.get("min_height", 0))),
        )
    if kind == "yolo_onnx":
        onnx_path = Path(parameters.get("onnx_path", "detector.onnx"))
        providers = [p for p in parameters.get("onnx_providers", "").split(",") if p]
        return YoloOnnxDetector(
            str(onnx_path if onnx_path.is_absolute() else model_dir / onnx_path),
            input_size=int(parameters.get("input_size", 640)),
            score_threshold=float(parameters.get("score_threshold", 0.25)),
            nms_iou=float(parameters.get("nms_iou", 0.45)),
            providers=providers or None,
            threads=int(parameters.get("intra_op_threads", 2)),
        )
    raise ValueError(f"plate_detector: unknown detector {kind!r} (expected haar or yolo_onnx)")
