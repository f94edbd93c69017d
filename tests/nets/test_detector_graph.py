"""The rewritten plate detector: signature, any batch and canvas shape, best rows, agreement with the
published graph on 640x640 canvases, and the same plates through canvases of the frame's aspect."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

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
from tests.model_repository.conftest import load_model_file

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


def test_signature_and_shape_free_reshapes(exported_repository: Path) -> None:
    model = onnx.load(str(artifact_path(exported_repository, "plate_detector")))
    onnx.checker.check_model(model, full_check=True)
    (model_input,), (model_output,) = model.graph.input, model.graph.output

    def dims(info: onnx.ValueInfoProto) -> list[str | int]:
        return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]

    assert (model_input.name, model_input.type.tensor_type.elem_type) == ("images", onnx.TensorProto.UINT8)
    assert dims(model_input) == ["batch", "height", "width", 3]
    assert (model_output.name, model_output.type.tensor_type.elem_type) == (
        "detections",
        onnx.TensorProto.FLOAT,
    )
    assert dims(model_output)[0] == "batch" and dims(model_output)[2] == 15
    constants = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
    # Reshape targets are computed from their input's shape (literal ones only place a grid axis),
    # and no constant is shaped for the published 80x80, 40x40, 20x20 grids any more
    literal = [
        constants[n.input[1]] for n in model.graph.node if n.op_type == "Reshape" and n.input[1] in constants
    ]
    assert all(set(target.tolist()) <= {1, -1} for target in literal)
    assert not [
        name for name, value in constants.items() if value.ndim == 5 and {20, 40, 80} & set(value.shape)
    ]


def test_only_the_best_rows_are_decoded(exported_repository: Path) -> None:
    """Every anchor gets a score; the decode (the Sigmoid over whole rows, the corners' Tile) runs
    after TopK, on the rows it chose."""
    graph = onnx.load(str(artifact_path(exported_repository, "plate_detector"))).graph
    (topk,) = [node for node in graph.node if node.op_type == "TopK"]
    after, grown = set(topk.output), True
    while grown:
        grown = False
        for node in graph.node:
            if set(node.input) & after and not set(node.output) <= after:
                after |= set(node.output)
                grown = True
    decode = [
        node for node in graph.node if node.op_type == "Tile" or node.name.startswith("stream_worker/decoded")
    ]
    assert len(decode) == 3
    assert all(set(node.output) <= after for node in decode)


def test_the_channel_shuffles_run_as_interleaves(exported_repository: Path) -> None:
    """All 16 shuffles of the published graph are interleaves (detector_shuffles.py): no Transpose
    but the input's and the head's."""
    graph = onnx.load(str(artifact_path(exported_repository, "plate_detector"))).graph
    shuffles = {
        node.name.split("/")[1] for node in graph.node if node.name.startswith("stream_worker/shuffle_")
    }
    assert len(shuffles) == 16
    transposes = [node for node in graph.node if node.op_type == "Transpose"]
    assert [list(node.attribute[0].ints) for node in transposes].count([0, 2, 1, 3, 4]) == 0
    assert len(transposes) == 1 + 3  # NHWC -> NCHW, and one per head level


def test_dynamic_reshape_parts_take_batch_and_spatial_size_from_the_input() -> None:
    parts = detector_graph.dynamic_reshape_parts
    assert parts([1, 2, 32, 80, 80], [1, 64, 80, 80]) == (1, [2, 32], 2)
    assert parts([1, -1, 40, 40], [1, 64, 2, 40, 40]) == (1, [-1], 2)
    assert parts([1, -1, 15], [1, 3, 80, 80, 15]) == (1, [-1], 1)
    with pytest.raises(detector_graph.DetectorGraphError):
        parts([2, -1], [2, 8])


def test_the_head_levels_are_read_from_the_published_graph() -> None:
    levels = detector_graph.head_levels(onnx.load(str(SOURCE)))
    assert [level.stride for level in levels] == [8.0, 16.0, 32.0]
    np.testing.assert_array_equal(levels[1].anchors, [[23, 29], [43, 55], [73, 105]])


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float((np.abs(actual - expected) / np.maximum(1.0, np.abs(expected))).max())


def test_a_frame_alone_and_inside_a_batch_of_16_other_frames_agree(
    detector: ort.InferenceSession,
    source: ort.InferenceSession,
    car_frame: np.ndarray,
    other_frames: np.ndarray,
) -> None:
    """The rewritten detector's rows for a frame alone and inside a batch of 16 other frames agree
    within 1e-3, and both are the published graph's best rows for that frame (within 1e-3, relative
    for coordinates above 1 px: the pixel scaling is folded into the weights)."""
    (alone,) = detector.run(None, {"images": car_frame[None]})
    batch = np.concatenate([other_frames[:7], car_frame[None], other_frames[7:]])
    (batched,) = detector.run(None, {"images": batch})
    (published,) = source.run(None, {"input": detector_graph.source_pixels(car_frame[None])})
    in_batch_diff = float(np.abs(batched[7] - alone[0]).max())
    published_diff = detector_graph.rows_error(alone[0], published[0])
    print(
        f"car frame: max |alone - in a batch of 17| = {in_batch_diff:.3g}, "
        f"max error vs published (relative above 1) = {published_diff:.3g}"
    )
    assert batched.shape == (17, detector_graph.TOP_K, 15)
    assert in_batch_diff < 1e-3 and published_diff < 1e-3
    for index, frame in enumerate(other_frames[:3]):
        (published,) = source.run(None, {"input": detector_graph.source_pixels(frame[None])})
        assert detector_graph.rows_error(batched[index], published[0]) < 1e-3


def test_the_answer_is_the_best_rows_best_first_a_few_kilobytes(
    detector: ort.InferenceSession, car_frame: np.ndarray
) -> None:
    (rows,) = detector.run(None, {"images": car_frame[None]})
    scores = detector_graph.scores(rows[0])
    print(f"answer per canvas: {rows[0].nbytes} bytes (all anchors: {25200 * 15 * 4})")
    assert rows[0].nbytes <= 6000
    assert (np.diff(scores) <= 0).all()
    # a canvas smaller than TOP_K anchors answers all of them: 32x32 has 3 x (16 + 4 + 1)
    (tiny,) = detector.run(None, {"images": np.zeros((2, 32, 32, 3), np.uint8)})
    assert tiny.shape == (2, 63, 15)


@pytest.mark.parametrize("pad_value", [114, 0])
def test_top_detection_on_the_car_matches_the_published_graph(
    detector: ort.InferenceSession, source: ort.InferenceSession, pad_value: int
) -> None:
    frame, scale, (left, top) = letterbox(_image("car.jpg"), pad_value)
    (rewritten,) = detector.run(None, {"images": frame[None]})
    (published,) = source.run(None, {"input": detector_graph.source_pixels(frame[None])})
    best = int(np.argmax(_score(published[0])))
    np.testing.assert_allclose(rewritten[0, 0], published[0, best], atol=1e-3)
    cx, cy, w, h = rewritten[0, 0, :4]
    box = np.array([cx - w / 2 - left, cy - h / 2 - top, cx + w / 2 - left, cy + h / 2 - top]) / scale
    score, overlap = float(_score(rewritten[0, 0])), _iou(box, np.array(VAN_PLATE, np.float64))
    print(f"pad {pad_value}: top score {score:.3f}, box {np.round(box, 1).tolist()}, IoU {overlap:.2f}")
    assert score > 0.5 and overlap > 0.5


def _square_plates(source: ort.InferenceSession, detections: ModuleType, image: np.ndarray) -> Any:
    """Today's plates: the published graph on the 640x640 letterbox of each scale, then NMS."""
    rows, placements = [], []
    for fraction in (1.0, 0.75):
        scale = min(SIZE * fraction / image.shape[1], SIZE * fraction / image.shape[0])
        new_w, new_h = max(1, round(image.shape[1] * scale)), max(1, round(image.shape[0] * scale))
        left, top = (SIZE - new_w) // 2, (SIZE - new_h) // 2
        canvas = np.zeros((SIZE, SIZE, 3), np.uint8)
        canvas[top : top + new_h, left : left + new_w] = cv2.resize(
            image, (new_w, new_h), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        )
        rows.append(source.run(None, {"input": detector_graph.source_pixels(canvas[None])})[0][0])
        placements.append(detections.Placement(scale, left, top))
    size = [(image.shape[1], image.shape[0])]
    return detections.frame_detections(rows, placements, size, 2, 0.25, 0.5)[0]


def _our_plates(detector: ort.InferenceSession, detections: ModuleType, image: np.ndarray) -> Any:
    canvases = detections.canvases_for([image], (1.0, 0.75), (64, 64))
    rows = [np.zeros((0, 15), np.float32)] * 2
    for batch in canvases.batches:
        (found,) = detector.run(None, {"images": batch.pixels})
        for view, view_rows in zip(batch.views, found, strict=True):
            rows[view] = view_rows
    size = [(image.shape[1], image.shape[0])]
    return detections.frame_detections(rows, canvases.placements, size, 2, 0.25, 0.5)[0]


def _framed(width: int, height: int) -> np.ndarray:
    """The car photo cut around the van to this aspect, then resized to width x height."""
    car = _image("car.jpg")
    crop_w = min(car.shape[1], round(car.shape[0] * width / height))
    crop_h = min(car.shape[0], round(crop_w * height / width))
    left = min(max(0, 112 - crop_w // 2), car.shape[1] - crop_w)  # the van's plate is near x 112
    top = car.shape[0] - crop_h
    return cv2.resize(car[top:, left : left + crop_w], (width, height), interpolation=cv2.INTER_AREA)


@pytest.mark.parametrize(
    ("width", "height"),
    [(1920, 1080), (1440, 1080), (1080, 1920), (3840, 2160), (1280, 720), (400, 225)],
    ids=["16:9", "4:3", "portrait", "4K", "720p", "tiny"],
)
def test_frames_of_any_aspect_give_the_plates_of_square_canvases(
    detector: ort.InferenceSession, source: ort.InferenceSession, width: int, height: int
) -> None:
    """Canvases of the frame's aspect find what the published graph finds in 640x640 letterboxes of
    the same frame: the van's plate, within a few pixels (in 640-pixel canvas units)."""
    detections = load_model_file("plate_recognition", "detections")
    image = _framed(width, height)
    square, ours = _square_plates(source, detections, image), _our_plates(detector, detections, image)
    unit = max(width, height) / SIZE  # frame pixels per canvas pixel at scale 1.0
    print(
        f"{width}x{height}: square {np.round(square.boxes / unit, 1).tolist()}, "
        f"ours {np.round(ours.boxes / unit, 1).tolist()}"
    )
    assert len(square) >= 1 and len(ours) == len(square)
    np.testing.assert_allclose(ours.boxes / unit, square.boxes / unit, atol=3.0)
    np.testing.assert_allclose(ours.corners / unit, square.corners / unit, atol=3.0)


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
