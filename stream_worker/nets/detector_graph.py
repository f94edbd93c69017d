"""Turn HyperLPR's plate detector graph into the one Triton serves: any batch size, uint8 BGR pixels in.

The published graph (`y5fu_640x_sim.onnx`, facts in shared/MODELS.md) has its batch size fixed at 1
by literal shape constants and takes float RGB NCHW pixels divided by 255. Triton's dynamic batcher
needs a batch axis, and a float frame is four times the bytes of the uint8 one OpenCV produces. So
the rewritten graph takes `images` uint8 `[batch, 640, 640, 3]` (a letterboxed BGR frame as is) and
does the cast and the NCHW transpose itself, with the /255 and BGR->RGB folded into the first
convolution's weights; the network after that is unchanged, and so is its output (renamed
`detections`). Every rewrite is checked with ONNX Runtime against per-image runs of the original
graph before it replaces the artifact. Needs `onnx` and `onnxruntime` (the export extra), never torch.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from stream_worker.nets.errors import ModelPrepareError

SOURCE_INPUT = "input"
SOURCE_OUTPUT = "output"
INPUT_NAME = "images"
OUTPUT_NAME = "detections"
BATCH_DIM = "batch"
INPUT_SIZE = 640
ANCHORS = 25200
ROW_WIDTH = 15
# Outputs are pixel coordinates (up to 640) and probabilities: errors count absolutely below 1 and
# relatively above, so folding the pixel scaling into the weights (float rounding: 1.1e-4 measured)
# passes and a wrong graph does not.
MAX_ERROR = 1e-3

log = logging.getLogger(__name__)


class DetectorGraphError(ModelPrepareError):
    """The detector graph cannot be rewritten, or the rewrite does not reproduce the original."""


def batch_agnostic_shape(shape: Sequence[int], input_shape: Sequence[int]) -> np.ndarray:
    """A Reshape target `[1, ...]` for a batch-1 input `input_shape`, as `[-1, ...]` for any batch.

    The leading -1 takes the batch, so a -1 already in the rest is replaced by the count it stood for.
    """
    rest = [int(d) for d in shape[1:]]
    if -1 in rest:
        per_sample = math.prod(input_shape[1:])
        known = math.prod(d for d in rest if d != -1)
        if input_shape[0] != 1 or 0 in rest or known <= 0 or per_sample % known:
            raise DetectorGraphError(
                f"cannot make Reshape {list(shape)} of input {list(input_shape)} batch-free"
            )
        rest = [per_sample // known if d == -1 else d for d in rest]
    return np.array([-1, *rest], np.int64)


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Every tensor's shape in the batch-1 source graph, by name."""
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim] for info in infos}


def make_batch_dynamic(model: onnx.ModelProto) -> int:
    """Rewrite, in place, every Reshape whose shape constant starts with a literal batch of 1.

    Returns how many Reshape nodes were rewritten.
    """
    graph = model.graph
    shapes = _static_shapes(model)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    added: set[str] = set()
    rewritten = 0
    for node in graph.node:
        if node.op_type != "Reshape":
            continue
        if node.input[1] not in initializers:
            raise DetectorGraphError(f"Reshape {node.name}: its shape is computed, not a constant")
        shape = numpy_helper.to_array(initializers[node.input[1]])
        if shape[0] != 1:
            continue
        new_shape = batch_agnostic_shape(shape, shapes.get(node.input[0], []) or [0])
        name = "batch_agnostic_shape_" + "_".join(str(d) for d in new_shape[1:])
        if name not in added:
            graph.initializer.append(numpy_helper.from_array(new_shape, name))
            added.add(name)
        node.input[1] = name
        rewritten += 1
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return rewritten


def fold_pixel_scaling_into_first_conv(model: onnx.ModelProto) -> None:
    """Make, in place, the Conv that reads the source input take BGR pixels in 0..255 instead.

    A convolution is linear in its input, so dividing the pixels by 255 and reordering their
    channels is the same as dividing its weights by 255 and reordering their input channels: the
    graph then spends nothing on either (a separate Div and Gather cost ~20 ms a frame on one core).
    """
    graph = model.graph
    readers = [node for node in graph.node if SOURCE_INPUT in node.input]
    if len(readers) != 1 or readers[0].op_type != "Conv" or readers[0].input[0] != SOURCE_INPUT:
        raise DetectorGraphError(
            f"expected the input {SOURCE_INPUT!r} to feed one Conv, found {[n.op_type for n in readers]}"
        )
    conv = readers[0]
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    weights = numpy_helper.to_array(initializers[conv.input[1]])
    if weights.ndim != 4 or weights.shape[1] != 3:
        raise DetectorGraphError(
            f"the first Conv's weights have shape {weights.shape}, expected [C, 3, k, k]"
        )
    folded = np.ascontiguousarray(weights[:, ::-1] / np.float32(255)).astype(np.float32)
    graph.initializer.append(numpy_helper.from_array(folded, "bgr_0_255_" + conv.input[1]))
    conv.input[1] = "bgr_0_255_" + conv.input[1]


def take_uint8_bgr_pixels(model: onnx.ModelProto) -> None:
    """Replace, in place, the float RGB NCHW input by `images` uint8 BGR NHWC and name the output."""
    graph = model.graph
    fold_pixel_scaling_into_first_conv(model)
    preprocessing = [
        helper.make_node("Cast", [INPUT_NAME], ["pixels"], name="pixels_to_float", to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["pixels"], [SOURCE_INPUT], name="nhwc_to_nchw", perm=[0, 3, 1, 2]),
    ]
    network = list(graph.node)
    for node in network:
        node.output[:] = [OUTPUT_NAME if name == SOURCE_OUTPUT else name for name in node.output]
        node.input[:] = [OUTPUT_NAME if name == SOURCE_OUTPUT else name for name in node.input]
    del graph.node[:]
    graph.node.extend(preprocessing + network)
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    del graph.input[:]
    graph.input.append(
        helper.make_tensor_value_info(INPUT_NAME, TensorProto.UINT8, [BATCH_DIM, INPUT_SIZE, INPUT_SIZE, 3])
    )
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [BATCH_DIM, ANCHORS, ROW_WIDTH])
    )


def rewrite(source: onnx.ModelProto) -> onnx.ModelProto:
    """The batch-dynamic, uint8-BGR-input copy of the source detector graph, checked by onnx."""
    model = onnx.ModelProto()
    model.CopyFrom(source)
    rewritten = make_batch_dynamic(model)
    take_uint8_bgr_pixels(model)
    del model.graph.value_info[:]  # the source's intermediate shapes all carry batch 1
    model.graph.doc_string = (
        "HyperLPR y5fu_640x_sim.onnx (Apache-2.0), batch-dynamic, uint8 BGR NHWC input (stream-worker)"
    )
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    log.debug("detector graph: %d Reshape nodes made batch-free", rewritten)
    return model


def source_pixels(frames: np.ndarray) -> np.ndarray:
    """What the source graph takes for uint8 BGR NHWC frames: float32 RGB NCHW in [0, 1]."""
    return np.ascontiguousarray(frames[..., ::-1].transpose(0, 3, 1, 2)).astype(np.float32) / np.float32(255)


def check_frames() -> np.ndarray:
    """Deterministic synthetic 640x640 BGR frames: noise, gradients, a letterboxed band, shapes."""
    axis = np.arange(INPUT_SIZE, dtype=np.float64)
    x, y = np.meshgrid(axis, axis)
    noise = np.random.default_rng(0).integers(0, 256, (INPUT_SIZE, INPUT_SIZE, 3))
    gradients = np.stack([x / 2.51, y / 2.51, (x + y) / 5.02], axis=-1)
    waves = 127.5 + 127.5 * np.stack([np.sin(x / 23), np.cos(y / 17), np.sin((x - y) / 31)], axis=-1)
    waves[:140] = waves[-140:] = 114  # the grey bands a letterbox of a 16:9 frame leaves
    shapes = np.full((INPUT_SIZE, INPUT_SIZE, 3), 40.0)
    shapes[(x - 450) ** 2 + (y - 160) ** 2 < 90**2] = (30, 60, 200)
    shapes[400:444, 120:320] = 235  # a white plate with dark glyph-like strokes
    for left in range(132, 310, 22):
        shapes[408:436, left : left + 8] = 20
    shapes[480:600, 420:600] = (200, 160, 90)
    return np.clip(np.stack([noise, gradients, waves, shapes]), 0, 255).astype(np.uint8)


def _session(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def max_error_vs_source(source: Path, rewritten: Path, frames: np.ndarray) -> float:
    """Largest |rewritten - source| / max(1, |source|) over `frames` run one by one and as one batch in
    the rewrite, against one-by-one runs of the source graph."""
    source_session, rewritten_session = _session(source), _session(rewritten)
    expected = np.concatenate(
        [source_session.run(None, {SOURCE_INPUT: source_pixels(frame[None])})[0] for frame in frames]
    )
    (together,) = rewritten_session.run(None, {INPUT_NAME: frames})
    alone = np.concatenate([rewritten_session.run(None, {INPUT_NAME: frame[None]})[0] for frame in frames])
    for actual in (together, alone):
        if actual.shape != expected.shape:
            raise DetectorGraphError(
                f"{rewritten}: output shape {actual.shape}, the source gives {expected.shape}"
            )
    scale = np.maximum(1.0, np.abs(expected))
    return float(max((np.abs(together - expected) / scale).max(), (np.abs(alone - expected) / scale).max()))


def build_detector(source: Path, target: Path) -> float:
    """Write the rewritten graph of `source` to `target` (replaced atomically, only once it matches
    the source within MAX_ERROR); returns the measured error."""
    model = rewrite(onnx.load(str(source)))
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".model.", suffix=".onnx.part", dir=target.parent)
    os.close(handle)
    temp_path = Path(temp_name)
    try:
        onnx.save(model, str(temp_path))
        diff = max_error_vs_source(source, temp_path, check_frames())
        if not diff < MAX_ERROR:
            raise DetectorGraphError(
                f"plate detector: the rewritten graph differs from {source.name} by {diff:.3g} "
                f"(limit {MAX_ERROR}, relative above 1); {target} left unchanged."
            )
        temp_path.chmod(0o644)  # readable by a Triton container running as another user
        os.replace(temp_path, target)
    finally:
        temp_path.unlink(missing_ok=True)
    log.info("rewrote %s -> %s (max error vs source %.2g)", source.name, target, diff)
    return diff
