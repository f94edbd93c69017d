"""Rewrite HyperLPR's plate detector graph for Triton: any batch, any canvas shape, a short answer.

The published graph (`y5fu_640x_sim.onnx`, facts in shared/MODELS.md) is fixed at one 640x640 float
RGB frame by literal shape constants, and answers every canvas with all 25,200 anchor rows. A
1920x1080 frame letterboxed into 640x640 is 44% padding, and the rows are 1.5 MB of float32 to
copy and filter. The network itself is fully convolutional, so the rewrite:

- takes `images` uint8 `[batch, height, width, 3]` (BGR, any height and width that are multiples
  of 32): the cast and the NCHW transpose run in the graph, the /255 and BGR->RGB are folded into
  the first convolution's weights;
- builds each channel shuffle's halves by interleaving the halves of its inputs, without the
  transpose and the whole-tensor copies (detector_shuffles.py: the same floats, 0.965x the CPU);
- makes every Reshape read the batch and the spatial size from its input;
- replaces the head's decode (whose grids and anchor grids are 640x640 constants) by the same
  arithmetic on grids computed from each level's size, with the anchors and strides read from the
  published constants;
- answers `detections` `[batch, TOP_K, 15]`: the TOP_K rows of highest score (objectness x best
  layout probability), best first, in the published row layout (`cx, cy, w, h, objectness, 4
  corners (x, y), p(single row), p(double row)` in canvas pixels). The caller thresholds them.
  Every anchor gets its score; only the TOP_K chosen rows are decoded.

Every rewrite is checked with ONNX Runtime against the published graph on 640x640 frames (its best
rows, one by one and batched) before it replaces the artifact. Needs `onnx` and `onnxruntime` (the
export extra), never torch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from stream_worker.nets.detector_shuffles import ShuffleRewriteError, interleave_channel_shuffles
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.placing import place_checked

SOURCE_INPUT = "input"
SOURCE_OUTPUT = "output"
INPUT_NAME = "images"
OUTPUT_NAME = "detections"
BATCH_DIM, HEIGHT_DIM, WIDTH_DIM = "batch", "height", "width"
INPUT_SIZE = 640  # the published graph's canvas
STRIDE = 32  # canvas sides must be multiples of the coarsest level's stride
ROW_WIDTH = 15
ANCHORS_PER_CELL = 3
# Rows answered per canvas. On ../shared/evalset (189 photos, both scales, 378 canvases) a canvas
# had at most 23 rows above the 0.25 score threshold (median 7: each plate is seen by several
# anchors and levels); 100 rows leave room for a crowded scene and are 6 KB, against 1.5 MB for
# all 25,200.
TOP_K = 100
# Outputs are pixel coordinates (up to 640) and probabilities: errors count absolutely below 1 and
# relatively above, so folding the pixel scaling into the weights (float rounding: 1.1e-4 measured)
# passes and a wrong graph does not.
MAX_ERROR = 1e-3

log = logging.getLogger(__name__)


class DetectorGraphError(ModelPrepareError):
    """The detector graph cannot be rewritten, or the rewrite does not reproduce the original."""


@dataclass(frozen=True)
class HeadLevel:
    """One output level of the YOLO head: its 1x1 Conv's output, stride and anchors (w, h) in pixels."""

    conv_output: str
    stride: float
    anchors: np.ndarray  # [3, 2]


class _Builder:
    """Adds nodes and constants to a graph under unique names."""

    def __init__(self, graph: onnx.GraphProto, prefix: str) -> None:
        self.graph, self.prefix, self.count = graph, prefix, 0
        self.nodes: list[onnx.NodeProto] = []

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{self.prefix}/{hint}_{self.count}"

    def const(self, value: np.ndarray | float | list[int], hint: str = "const") -> str:
        name = self.name(hint)
        array = np.asarray(value)
        array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float32)
        self.graph.initializer.append(numpy_helper.from_array(array, name))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "", outputs: int = 1, **attrs: object) -> str:
        names = [self.name(hint or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=names[0], **attrs))
        return names[0] if outputs == 1 else names  # type: ignore[return-value]

    def dims(self, tensor: str, indices: list[int]) -> str:
        """1-D int64 of `tensor`'s dims at `indices`, read at run time."""
        return self.op("Gather", [self.op("Shape", [tensor]), self.const(indices)], axis=0)


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Every tensor's shape in the batch-1 640x640 source graph, by name."""
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim] for info in infos}


def dynamic_reshape_parts(target: list[int], input_shape: list[int]) -> tuple[int, list[int], int]:
    """How a literal Reshape target of the batch-1 graph reads at run time: `(1, middle, k)` means
    `[batch] + middle + input's last k dims`, the trailing dims that equal the input's own (the
    spatial size of a channel shuffle) being taken from the input instead of the literal."""
    if not target or target[0] != 1 or not input_shape or input_shape[0] != 1:
        raise DetectorGraphError(f"Reshape {target} of input {input_shape}: expected a leading batch of 1")
    trailing = 0
    while (
        trailing < 2
        and trailing < len(target) - 1
        and trailing < len(input_shape) - 1
        and target[-1 - trailing] == input_shape[-1 - trailing] > 0
    ):
        trailing += 1
    return 1, [int(d) for d in target[1 : len(target) - trailing]], trailing


def make_shape_dynamic(model: onnx.ModelProto, builder: _Builder, shapes: dict[str, list[int]]) -> int:
    """Rewrite, in place, every Reshape so that its batch and spatial dims come from its input
    (`shapes`: the source's static shapes). Returns how many Reshape nodes were rewritten.
    """
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    rewritten = 0
    for node in model.graph.node:
        if node.op_type != "Reshape":
            continue
        if node.input[1] not in initializers:
            raise DetectorGraphError(f"Reshape {node.name}: its shape is computed, not a constant")
        target = numpy_helper.to_array(initializers[node.input[1]]).tolist()
        input_shape = shapes.get(node.input[0], [])
        _, middle, trailing = dynamic_reshape_parts(target, input_shape)
        rank = len(input_shape)
        parts = [builder.dims(node.input[0], [0])]
        if middle:
            parts.append(builder.const(middle, "shape"))
        if trailing:
            parts.append(builder.dims(node.input[0], list(range(rank - trailing, rank))))
        node.input[1] = builder.op("Concat", parts, "reshape_target", axis=0)
        rewritten += 1
    return rewritten


def head_levels(model: onnx.ModelProto) -> list[HeadLevel]:
    """The head's levels, finest first, read from the published decode: each level's Conv output is
    reshaped to `[1, 3, 15, H, W]`; its stride is the literal the xy offsets are multiplied by, its
    anchors the `[1, 3, H, W, 2]` constant the squared wh are multiplied by."""
    graph = model.graph
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def downstream(start: str, limit: int = 60) -> list[onnx.NodeProto]:
        seen, queue, found = {start}, [start], []
        while queue and len(found) < limit:
            for node in consumers.get(queue.pop(0), []):
                if node.output[0] not in seen:
                    seen.add(node.output[0])
                    found.append(node)
                    queue.extend(node.output)
        return found

    levels = []
    for node in graph.node:
        if node.op_type != "Conv" or len(node.output) != 1:
            continue
        readers = consumers.get(node.output[0], [])
        if len(readers) != 1 or readers[0].op_type != "Reshape":
            continue
        target = constants.get(readers[0].input[1])
        if target is None or target.tolist()[:3] != [1, ANCHORS_PER_CELL, ROW_WIDTH]:
            continue
        after = downstream(node.output[0])
        strides = [
            float(constants[name])
            for n in after
            if n.op_type == "Mul"
            for name in n.input
            if name in constants and constants[name].ndim == 0 and float(constants[name]) >= 8
        ]
        pows = [n for n in after if n.op_type == "Pow"]
        anchor_grids = [
            constants[name]
            for pow_node in pows
            for n in consumers.get(pow_node.output[0], [])
            if n.op_type == "Mul"
            for name in n.input
            if name in constants and constants[name].ndim == 5
        ]
        if len(strides) != 1 or len(anchor_grids) != 1:
            raise DetectorGraphError(f"head Conv {node.name}: cannot read its stride and anchors")
        anchors = anchor_grids[0][0, :, 0, 0, :].astype(np.float32)
        levels.append(HeadLevel(node.output[0], strides[0], anchors))
    if len(levels) != 3:
        raise DetectorGraphError(f"expected 3 head levels, found {len(levels)}")
    return sorted(levels, key=lambda level: level.stride)


def _level_rows(b: _Builder, level: HeadLevel) -> tuple[str, str]:
    """One level's raw rows `[batch, 3 * H * W, 15]` (anchor, then row, then column: the published
    order), and what each row needs to be decoded, `[3 * H * W, 5]`: its cell (x, y), the level's
    stride and its anchor (w, h)."""
    raw = level.conv_output
    target = b.op(
        "Concat", [b.dims(raw, [0]), b.const([ANCHORS_PER_CELL, ROW_WIDTH]), b.dims(raw, [2, 3])], axis=0
    )
    rows = b.op("Transpose", [b.op("Reshape", [raw, target])], perm=[0, 1, 3, 4, 2])  # [B, 3, H, W, 15]
    flat = b.op("Concat", [b.dims(raw, [0]), b.const([-1, ROW_WIDTH])], axis=0)
    height = b.op("Squeeze", [b.dims(raw, [2])], axes=[0])
    width = b.op("Squeeze", [b.dims(raw, [3])], axes=[0])
    zero, one = b.const(np.int64(0)), b.const(np.int64(1))
    xs = b.op("Cast", [b.op("Range", [zero, width, one])], to=TensorProto.FLOAT)
    ys = b.op("Cast", [b.op("Range", [zero, height, one])], to=TensorProto.FLOAT)
    cells = b.op("Concat", [b.const([ANCHORS_PER_CELL]), b.dims(raw, [2, 3]), b.const([1])], axis=0)
    grid_x = b.op("Expand", [b.op("Reshape", [xs, b.const([1, 1, -1, 1])]), cells])
    grid_y = b.op("Expand", [b.op("Reshape", [ys, b.const([1, -1, 1, 1])]), cells])
    stride = b.op("Expand", [b.const(np.full((1, 1, 1, 1), level.stride, np.float32)), cells])
    anchor = b.op(
        "Expand",
        [
            b.const(level.anchors.reshape(ANCHORS_PER_CELL, 1, 1, 2), "anchors"),
            b.op("Mul", [cells, b.const([1, 1, 1, 2])]),
        ],
    )
    meta = b.op("Concat", [grid_x, grid_y, stride, anchor], "meta", axis=-1)  # [3, H, W, 5]
    return b.op("Reshape", [rows, flat], "level_rows"), b.op("Flatten", [meta], "level_meta", axis=3)


def _decode_rows(b: _Builder, raw: str, meta: str) -> str:
    """Rows decoded as the published head does (YOLOv5 with corner points): xy = (2 sigmoid - 0.5 +
    cell) * stride, wh = (2 sigmoid)^2 * anchor, corners = raw * anchor + cell * stride, objectness
    and layout probabilities sigmoid; the same operations in the same order, so the same floats."""

    def part(tensor: str, start: int, end: int) -> str:
        return b.op("Slice", [tensor, b.const([start]), b.const([end]), b.const([-1])])

    grid, stride, anchors = part(meta, 0, 2), part(meta, 2, 3), part(meta, 3, 5)
    sig = b.op("Sigmoid", [raw])
    offsets = b.op("Sub", [b.op("Mul", [part(sig, 0, 2), b.const(2.0)]), b.const(0.5)])
    xy = b.op("Mul", [b.op("Add", [offsets, grid]), stride])
    doubled = b.op("Mul", [part(sig, 2, 4), b.const(2.0)])
    wh = b.op("Mul", [b.op("Mul", [doubled, doubled]), anchors])
    four = b.const([1, 1, 4])
    cell_pixels = b.op("Tile", [b.op("Mul", [grid, stride]), four])
    corners = b.op("Add", [b.op("Mul", [part(raw, 5, 13), b.op("Tile", [anchors, four])]), cell_pixels])
    return b.op("Concat", [xy, wh, part(sig, 4, 5), corners, part(sig, 13, 15)], "decoded", axis=-1)


def _best_rows(b: _Builder, rows: str, meta: str, top_k: int) -> str:
    """The `top_k` rows (or all, if fewer) of highest objectness x best layout probability, best
    first, decoded. Only the scores are computed for every anchor; the decode runs on the chosen
    rows (it cost 13% of the detector's CPU when it ran on all of them)."""
    objectness = b.op("Sigmoid", [b.op("Slice", [rows, b.const([4]), b.const([5]), b.const([2])])])
    layout = b.op(
        "ReduceMax",
        [b.op("Sigmoid", [b.op("Slice", [rows, b.const([13]), b.const([15]), b.const([2])])])],
        axes=[2],
    )
    scores = b.op("Squeeze", [b.op("Mul", [objectness, layout])], axes=[2])  # [B, N]
    k = b.op("Min", [b.const([top_k]), b.dims(scores, [1])])
    _, indices = b.op("TopK", [scores, k], outputs=2, axis=1, largest=1, sorted=1)
    gather_shape = b.op("Concat", [b.op("Shape", [indices]), b.const([ROW_WIDTH])], axis=0)
    gather = b.op("Expand", [b.op("Unsqueeze", [indices], axes=[2]), gather_shape])
    best = b.op("GatherElements", [rows, gather], axis=1)  # [B, K, 15], raw
    return _decode_rows(b, best, b.op("Gather", [meta, indices], axis=0))  # meta: [B, K, 5]


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


def _prune(graph: onnx.GraphProto, outputs: list[str]) -> None:
    """Drop, in place, every node and constant the outputs do not depend on."""
    producers = {name: node for node in graph.node for name in node.output}
    needed, queue = set(), list(outputs)
    while queue:
        name = queue.pop()
        node = producers.get(name)
        if node is None or id(node) in needed:
            continue
        needed.add(id(node))
        queue.extend(node.input)
    kept = [node for node in graph.node if id(node) in needed]
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for node in graph.node for name in node.input}
    constants = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(constants)


def rewrite(source: onnx.ModelProto, top_k: int = TOP_K) -> onnx.ModelProto:
    """The batch- and shape-dynamic, uint8-BGR-input, top-K-answering copy of the source graph."""
    model = onnx.ModelProto()
    model.CopyFrom(source)
    graph = model.graph
    levels = head_levels(model)
    builder = _Builder(graph, "stream_worker")
    shapes = _static_shapes(model)
    rewritten = make_shape_dynamic(model, builder, shapes)
    # After make_shape_dynamic, which wants every Reshape's target a literal: the interleaves' targets
    # are read from their inputs. The shuffles' own Reshapes it rewrote are dropped (pruned below).
    try:
        shuffles = interleave_channel_shuffles(model, shapes)
    except ShuffleRewriteError as error:
        raise DetectorGraphError(f"plate detector: channel shuffle: {error}") from None
    fold_pixel_scaling_into_first_conv(model)
    preprocessing = [
        helper.make_node("Cast", [INPUT_NAME], ["pixels"], name="pixels_to_float", to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["pixels"], [SOURCE_INPUT], name="nhwc_to_nchw", perm=[0, 3, 1, 2]),
    ]
    level_rows, level_meta = zip(*(_level_rows(builder, level) for level in levels), strict=True)
    rows = builder.op("Concat", list(level_rows), "rows", axis=1)
    meta = builder.op("Concat", list(level_meta), "meta", axis=0)
    best = _best_rows(builder, rows, meta, top_k)
    builder.nodes.append(helper.make_node("Identity", [best], [OUTPUT_NAME], name="best_rows"))
    network = [node for node in graph.node]
    del graph.node[:]
    # Shape-computing nodes were appended to the builder while rewriting Reshapes; ONNX wants a
    # topological order, which a sort by dependencies restores.
    graph.node.extend(_topological(preprocessing + network + builder.nodes))
    _prune(graph, [OUTPUT_NAME])
    del graph.input[:]
    graph.input.append(
        helper.make_tensor_value_info(INPUT_NAME, TensorProto.UINT8, [BATCH_DIM, HEIGHT_DIM, WIDTH_DIM, 3])
    )
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [BATCH_DIM, None, ROW_WIDTH])
    )
    del graph.value_info[:]  # the source's intermediate shapes all carry batch 1 and 640x640
    graph.doc_string = (
        "HyperLPR y5fu_640x_sim.onnx (Apache-2.0), any batch and canvas (multiples of 32), uint8 BGR "
        f"NHWC input, best {top_k} rows per canvas (stream-worker)"
    )
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    log.debug("detector graph: %d shuffles interleaved, %d Reshapes made shape-free", shuffles, rewritten)
    return model


def _topological(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    produced_by = {name: i for i, node in enumerate(nodes) for name in node.output}
    order, state = [], [0] * len(nodes)  # 0 new, 1 visiting, 2 done

    def visit(i: int) -> None:
        stack = [(i, iter(nodes[i].input))]
        state[i] = 1
        while stack:
            current, inputs = stack[-1]
            for name in inputs:
                j = produced_by.get(name)
                if j is not None and state[j] == 0:
                    state[j] = 1
                    stack.append((j, iter(nodes[j].input)))
                    break
            else:
                stack.pop()
                state[current] = 2
                order.append(nodes[current])

    for i in range(len(nodes)):
        if state[i] == 0:
            visit(i)
    return order


def source_pixels(frames: np.ndarray) -> np.ndarray:
    """What the source graph takes for uint8 BGR NHWC frames: float32 RGB NCHW in [0, 1]."""
    return np.ascontiguousarray(frames[..., ::-1].transpose(0, 3, 1, 2)).astype(np.float32) / np.float32(255)


def scores(rows: np.ndarray) -> np.ndarray:
    """Objectness x best layout probability, per row (MODELS.md)."""
    return rows[..., 4] * rows[..., 13:15].max(axis=-1)


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


def rows_error(actual: np.ndarray, published: np.ndarray) -> float:
    """How far a canvas's answer is from the published graph's rows for it: the answer must be the
    published rows of highest score, best first. Each answered row is compared with the published
    row nearest to it (ties in score may order differently), and the answered scores with the best
    published scores; errors count relatively above 1."""
    expected_scores = np.sort(scores(published))[::-1][: len(actual)]
    score_error = float(np.abs(scores(actual) - expected_scores).max(initial=0.0))
    candidates = published[np.argsort(-scores(published))[: 2 * len(actual) + 8]]
    error = np.abs(actual[:, None, :] - candidates[None, :, :]) / np.maximum(1.0, np.abs(candidates[None]))
    return max(score_error, float(error.max(axis=2).min(axis=1).max(initial=0.0)))


def max_error_vs_source(source: Path, rewritten: Path, frames: np.ndarray) -> float:
    """Largest `rows_error` over `frames` run one by one and as one batch in the rewrite, against
    one-by-one runs of the source graph."""
    source_session, rewritten_session = _session(source), _session(rewritten)
    expected = [
        source_session.run(None, {SOURCE_INPUT: source_pixels(frame[None])})[0][0] for frame in frames
    ]
    (together,) = rewritten_session.run(None, {INPUT_NAME: frames})
    alone = [rewritten_session.run(None, {INPUT_NAME: frame[None]})[0][0] for frame in frames]
    worst = 0.0
    for published, batched, single in zip(expected, together, alone, strict=True):
        if batched.shape != single.shape or batched.shape[1:] != published.shape[1:]:
            raise DetectorGraphError(
                f"{rewritten}: output rows {batched.shape}, the source's {published.shape}"
            )
        worst = max(worst, rows_error(batched, published), rows_error(single, published))
    return worst


def build_detector(source: Path, target: Path) -> float:
    """Write the rewritten graph of `source` to `target` (replaced atomically, only once it matches
    the source within MAX_ERROR); returns the measured error."""
    diff = place_checked(
        rewrite(onnx.load(str(source))),
        target,
        lambda rewritten: max_error_vs_source(source, rewritten, check_frames()),
        lambda diff: (
            None
            if diff < MAX_ERROR
            else DetectorGraphError(
                f"plate detector: the rewritten graph differs from {source.name} by {diff:.3g} "
                f"(limit {MAX_ERROR}, relative above 1); {target} left unchanged."
            )
        ),
    )
    log.info("rewrote %s -> %s (max error vs source %.2g)", source.name, target, diff)
    return diff
