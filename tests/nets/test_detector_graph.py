"""The batch-dynamic plate detector: signature, batch invariance, agreement with the published graph."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from stream_worker.nets import detector_graph
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import artifact_path
from tests.conftest import samples_dir, weights_dir

SOURCE = weights_dir() / "y5fu_640x_sim.onnx"
SIZE = detector_graph.INPUT_SIZE
# The van's plate in samples/car.jpg (MODELS.md), x1, y1, x2, y2 in pixels.
VAN_PLATE = (94, 331, 132, 342)


def letterbox(image: np.ndarray, pad_value: int) -> tuple[np.ndarray, float, tuple[int, int]]:
    """The frame the detector takes: `image` scaled into 640x640, centred, padded; scale and offset."""
    height, width = image.shape[:2]
    scale = min(SIZE / height, SIZE / width)
    new_w, new_h = round(width * scale), round(height * scale)
    left, top = (SIZE - new_w) // 2, (SIZE - new_h) // 2
    canvas = np.full((SIZE, SIZE, 3), pad_value, np.uint8)
    canvas[top : top + new_h, left : left + new_w] = cv2.resize(image, (new_w, new_h))
    return canvas, scale, (left, top)


def _image(name: str) -> np.ndarray:
    image = cv2.imread(str(samples_dir() / name))
    assert image is not None, f"cannot read {samples_dir() / name}"
    return image


@pytest.fixture(scope="module")
def detector(exported_repository: Path) -> ort.InferenceSession:
    return ort.InferenceSession(
        str(artifact_path(exported_repository, "plate_detector")), providers=["CPUExecutionProvider"]
    )


@pytest.fixture(scope="module")
def source() -> ort.InferenceSession:
    return ort.InferenceSession(str(SOURCE), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def car_frame() -> np.ndarray:
    return letterbox(_image("car.jpg"), pad_value=114)[0]


@pytest.fixture(scope="module")
def other_frames() -> np.ndarray:
    """16 frames that are not car_frame: the cat, the car flipped and shifted, synthetic frames."""
    car, cat = _image("car.jpg"), _image("cat.jpeg")
    frames = [
        letterbox(cat, 114)[0],
        letterbox(cat, 0)[0],
        letterbox(car, 0)[0],
        letterbox(car[:, ::-1], 114)[0],
    ]
    frames += [np.roll(letterbox(car, 114)[0], shift, axis=(0, 1)) for shift in ((40, 90), (-70, -30))]
    frames += [letterbox(car[y : y + 200, x : x + 300], 114)[0] for y in (0, 200) for x in (0, 240, 480)]
    frames += list(detector_graph.check_frames())
    assert len(frames) == 16
    return np.stack(frames)


def _score(rows: np.ndarray) -> np.ndarray:
    """Objectness x best class probability, per row (MODELS.md)."""
    return rows[..., 4] * rows[..., 13:].max(axis=-1)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    inter = np.prod(np.clip(np.minimum(a[2:], b[2:]) - np.maximum(a[:2], b[:2]), 0, None))
    return float(inter / (np.prod(a[2:] - a[:2]) + np.prod(b[2:] - b[:2]) - inter))


def test_signature_and_reshapes(exported_repository: Path) -> None:
    model = onnx.load(str(artifact_path(exported_repository, "plate_detector")))
    onnx.checker.check_model(model, full_check=True)
    (model_input,), (model_output,) = model.graph.input, model.graph.output

    def dims(info: onnx.ValueInfoProto) -> list[str | int]:
        return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]

    assert (model_input.name, model_input.type.tensor_type.elem_type) == ("images", onnx.TensorProto.UINT8)
    assert dims(model_input) == ["batch", 640, 640, 3]
    assert (model_output.name, model_output.type.tensor_type.elem_type) == (
        "detections",
        onnx.TensorProto.FLOAT,
    )
    assert dims(model_output) == ["batch", 25200, 15]
    constants = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
    leading = [int(constants[node.input[1]][0]) for node in model.graph.node if node.op_type == "Reshape"]
    assert leading == [-1] * 38


def test_batch_agnostic_shape_makes_the_hidden_channel_count_explicit() -> None:
    assert detector_graph.batch_agnostic_shape([1, -1, 15], [1, 3, 80, 80, 15]).tolist() == [-1, 19200, 15]
    assert detector_graph.batch_agnostic_shape([1, -1, 40, 40], [1, 64, 2, 40, 40]).tolist() == [
        -1,
        128,
        40,
        40,
    ]
    assert detector_graph.batch_agnostic_shape([1, 2, 32, 80, 80], [1, 64, 80, 80]).tolist() == [
        -1,
        2,
        32,
        80,
        80,
    ]


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float((np.abs(actual - expected) / np.maximum(1.0, np.abs(expected))).max())


def test_a_frame_alone_and_inside_a_batch_of_16_other_frames_agree(
    detector: ort.InferenceSession,
    source: ort.InferenceSession,
    car_frame: np.ndarray,
    other_frames: np.ndarray,
) -> None:
    """The batch-dynamic detector's outputs for a frame alone and inside a batch of 16 other frames
    agree within 1e-3, and both agree with the published graph run on that frame alone (within
    1e-3, relative for coordinates above 1 px: the pixel scaling is folded into the weights)."""
    (alone,) = detector.run(None, {"images": car_frame[None]})
    batch = np.concatenate([other_frames[:7], car_frame[None], other_frames[7:]])
    (batched,) = detector.run(None, {"images": batch})
    (published,) = source.run(None, {"input": detector_graph.source_pixels(car_frame[None])})
    in_batch_diff = float(np.abs(batched[7] - alone[0]).max())
    published_diff = relative_error(alone, published)
    print(
        f"car frame: max |alone - in a batch of 17| = {in_batch_diff:.3g}, "
        f"max error vs published (relative above 1) = {published_diff:.3g}"
    )
    assert batched.shape == (17, 25200, 15)
    assert in_batch_diff < 1e-3 and published_diff < 1e-3
    for index, frame in enumerate(other_frames[:3]):
        (published,) = source.run(None, {"input": detector_graph.source_pixels(frame[None])})
        assert relative_error(batched[index], published[0]) < 1e-3


@pytest.mark.parametrize("pad_value", [114, 0])
def test_top_detection_on_the_car_matches_the_published_graph(
    detector: ort.InferenceSession, source: ort.InferenceSession, pad_value: int
) -> None:
    frame, scale, (left, top) = letterbox(_image("car.jpg"), pad_value)
    (rewritten,) = detector.run(None, {"images": frame[None]})
    (published,) = source.run(None, {"input": detector_graph.source_pixels(frame[None])})
    best = int(np.argmax(_score(published[0])))
    assert int(np.argmax(_score(rewritten[0]))) == best
    np.testing.assert_allclose(rewritten[0, best], published[0, best], atol=1e-3)
    cx, cy, w, h = rewritten[0, best, :4]
    box = np.array([cx - w / 2 - left, cy - h / 2 - top, cx + w / 2 - left, cy + h / 2 - top]) / scale
    score, overlap = float(_score(rewritten[0, best])), _iou(box, np.array(VAN_PLATE, np.float64))
    print(f"pad {pad_value}: top score {score:.3f}, box {np.round(box, 1).tolist()}, IoU {overlap:.2f}")
    assert score > 0.5 and overlap > 0.5


def test_a_rewrite_that_disagrees_fails_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "plate_detector" / "1" / "model.onnx"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"previous artifact")
    monkeypatch.setattr(detector_graph, "MAX_ERROR", 0.0)
    with pytest.raises(
        detector_graph.DetectorGraphError, match=r"differs from y5fu_640x_sim\.onnx"
    ) as raised:
        detector_graph.build_detector(SOURCE, target)
    assert isinstance(raised.value, ModelPrepareError)
    assert target.read_bytes() == b"previous artifact"
    assert [p.name for p in target.parent.iterdir()] == ["model.onnx"]
