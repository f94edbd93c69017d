"""plate_detector's detectors without Triton: YOLO decoding end to end on a tiny ONNX model, and Haar."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

INPUT_SIZE = 64
# A 320x160 image letterboxed into 64x64: scale 0.2, 16 px of padding above and below.
IMAGE_W, IMAGE_H = 320, 160
# Rows (cx, cy, w, h, objectness, class score) in letterbox pixels.
ROWS = np.array(
    [
        [32, 32, 20, 10, 0.9, 1.0],  # the plate -> (110, 55, 210, 105) in the image
        [33, 32, 20, 10, 0.8, 1.0],  # the same plate again, lower score: removed by NMS
        [10, 20, 8, 4, 0.9, 0.5],  # a second plate -> (30, 10, 70, 30), score 0.45
        [50, 40, 8, 4, 0.1, 1.0],  # below the score threshold
        *[[8 * i, 8 * i, 6, 3, 0.0, 0.0] for i in range(8)],  # empty anchors, as in real heads
    ],
    np.float32,
)


def _constant_model(path: Path, output: np.ndarray) -> Path:
    """An ONNX 'detector' that ignores its image and always answers `output`."""
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["output0"], value=numpy_helper.from_array(output))],
        "yolo_stub",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, INPUT_SIZE, INPUT_SIZE])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(output.shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def _detect(detectors, tmp_path: Path, output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    onnx_path = _constant_model(tmp_path / "detector.onnx", output)
    detector = detectors.make_detector(
        {
            "detector": "yolo_onnx",
            "onnx_path": "detector.onnx",
            "input_size": str(INPUT_SIZE),
            "score_threshold": "0.3",
            "nms_iou": "0.5",
        },
        onnx_path.parent,
    )
    return detector.detect(np.zeros((IMAGE_H, IMAGE_W, 3), np.uint8))


def test_yolov5_layout_is_decoded_suppressed_and_mapped_back(detectors, tmp_path: Path) -> None:
    boxes, scores = _detect(detectors, tmp_path, ROWS[None])
    np.testing.assert_allclose(boxes, [[110, 55, 210, 105], [30, 10, 70, 30]], atol=1e-3)
    np.testing.assert_allclose(scores, [0.9, 0.45], atol=1e-6)


def test_yolov8_layout_without_objectness(detectors, tmp_path: Path) -> None:
    channels_first = ROWS[:, [0, 1, 2, 3, 4]].T[None]  # [1, 5, N]: the 5th row is the class score
    boxes, scores = _detect(detectors, tmp_path, np.ascontiguousarray(channels_first))
    np.testing.assert_allclose(boxes, [[110, 55, 210, 105], [30, 10, 70, 30]], atol=1e-3)
    np.testing.assert_allclose(scores, [0.9, 0.9], atol=1e-6)


def test_nothing_above_threshold_gives_empty_arrays(detectors, tmp_path: Path) -> None:
    rows = ROWS.copy()
    rows[:, 4] = 0.01
    boxes, scores = _detect(detectors, tmp_path, rows[None])
    assert boxes.shape == (0, 4) and scores.shape == (0,)
    assert boxes.dtype == np.float32 and scores.dtype == np.float32


def test_letterbox_centres_and_pads(detectors) -> None:
    canvas, scale, pad = detectors.letterbox(np.full((IMAGE_H, IMAGE_W, 3), 200, np.uint8), INPUT_SIZE)
    assert canvas.shape == (INPUT_SIZE, INPUT_SIZE, 3)
    assert scale == pytest.approx(0.2) and pad == (0.0, 16.0)
    assert (canvas[:16] == 114).all() and (canvas[16:48] == 200).all() and (canvas[48:] == 114).all()


def test_unknown_detector_and_missing_onnx_are_named(detectors, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown detector 'ssd'"):
        detectors.make_detector({"detector": "ssd"}, tmp_path)
    with pytest.raises(ValueError, match=r"missing\.onnx does not exist"):
        detectors.make_detector({"detector": "yolo_onnx", "onnx_path": "missing.onnx"}, tmp_path)


def _iou(a: np.ndarray, b: tuple[float, float, float, float]) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_haar_finds_the_sample_plate_in_source_pixels(detectors, car_jpeg: bytes) -> None:
    image = cv2.imdecode(np.frombuffer(car_jpeg, np.uint8), cv2.IMREAD_COLOR)
    boxes, scores = detectors.make_detector({}, Path(".")).detect(image)
    print("haar boxes", boxes.tolist(), "scores", scores.tolist())
    assert len(boxes) == 1
    assert _iou(boxes[0], (94, 331, 132, 342)) >= 0.4
    assert 0.0 < scores[0] < 1.0
