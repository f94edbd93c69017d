"""Channel shuffles of the plate detector without a transpose: the same floats in fewer copies.

Each ShuffleNet block of HyperLPR's detector ends in `Concat(a, b)` of two halves, then a channel
shuffle (Reshape to [1, 2, C/2, H, W], Transpose(0, 2, 1, 3, 4), Reshape back), and most blocks
then Slice the result into halves again. ONNX Runtime runs each of these as a copy: the Concat, the
Transpose and the two Slices copy the block's C channels three times. The shuffle only interleaves
a's and b's channels (out[2i] = a[i], out[2i + 1] = b[i]), so each half is built directly:

    half h = Reshape(Concat(Unsqueeze(a_h, 2), Unsqueeze(b_h, 2), axis=2))   # [1, C/2, H, W]

where a_h and b_h are the h-th halves of a and b (one Split each). A shuffle whose result is used
whole (the end of a stage) becomes the same Concat on axis 2 of a and b: two copies, then one.
Only data moves, so every float is the one the published graph computes (the rows of 1,454
canvases, of 617 photos of ../shared and 110 video frames, were identical to the bit). The detector
costs 0.965x its CPU (0.909-1.023: two canvases a frame, one thread, 12 interleaved rounds, load
0.12 before).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

SHUFFLE_PERM = [0, 2, 1, 3, 4]


class ShuffleRewriteError(ValueError):
    """A shuffle that does not have the expected shape (the caller reports it as a prepare error)."""


def _constant_ints(graph: onnx.GraphProto, name: str) -> list[int]:
    for tensor in graph.initializer:
        if tensor.name == name:
            return [int(v) for v in numpy_helper.to_array(tensor).reshape(-1)]
    raise ShuffleRewriteError(f"{name} is not a constant")


def _half_slices(graph: onnx.GraphProto, slices: list[onnx.NodeProto], channels: int) -> list[str] | None:
    """The outputs of the Slices that cut channels [0, C/2) and [C/2, C) (in that order), or None
    when the shuffle's users are anything else."""
    if len(slices) != 2 or any(node.op_type != "Slice" or len(node.input) not in (4, 5) for node in slices):
        return None
    halves: dict[tuple[int, int], str] = {}
    for node in slices:
        starts, ends, axes = (_constant_ints(graph, name) for name in node.input[1:4])
        steps = _constant_ints(graph, node.input[4]) if len(node.input) == 5 else [1]
        if axes != [1] or steps != [1] or len(starts) != 1 or len(ends) != 1:
            return None
        halves[(starts[0], min(ends[0], channels))] = node.output[0]
    half = channels // 2
    wanted = [(0, half), (half, channels)]
    return [halves[key] for key in wanted] if sorted(halves) == wanted else None


def interleave_channel_shuffles(model: onnx.ModelProto, shapes: dict[str, list[int]]) -> int:
    """Rewrite, in place, every `Concat(a, b) -> shuffle` of the source graph as described above;
    returns how many were rewritten. `shapes` are the batch-1 source's static shapes; the new
    Reshapes take their batch and spatial size from `a` at run time (whole: a's shape x [1, 2, 1, 1])."""
    graph = model.graph
    if any(entry.domain in ("", "ai.onnx") and entry.version >= 13 for entry in model.opset_import):
        raise ShuffleRewriteError("expected opset 12 or older (Split and Unsqueeze take attributes)")
    doubling = "stream_worker/shuffle/double_channels"
    graph.initializer.append(numpy_helper.from_array(np.array([1, 2, 1, 1], np.int64), doubling))
    producers = {name: node for node in graph.node for name in node.output}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    removed: set[int] = set()
    # The nodes that replace a shuffle go where its last Reshape was: after a and b, before any user.
    replacing: dict[int, list[onnx.NodeProto]] = {}
    count = 0

    for transpose in list(graph.node):
        perm = [list(a.ints) for a in transpose.attribute if a.name == "perm"]
        if transpose.op_type != "Transpose" or perm != [SHUFFLE_PERM]:
            continue
        split_reshape = producers.get(transpose.input[0])
        concat = producers.get(split_reshape.input[0]) if split_reshape is not None else None
        after = consumers.get(transpose.output[0], [])
        merge_reshape = after[0] if len(after) == 1 else None
        if (
            split_reshape is None
            or split_reshape.op_type != "Reshape"
            or concat is None
            or concat.op_type != "Concat"
            or len(concat.input) != 2
            or merge_reshape is None
            or merge_reshape.op_type != "Reshape"
            or len(consumers.get(split_reshape.output[0], [])) != 1
            or len(consumers.get(concat.output[0], [])) != 1
        ):
            raise ShuffleRewriteError(
                f"{transpose.name}: not a Concat -> Reshape -> Transpose -> Reshape shuffle"
            )
        a, b = concat.input
        shape = shapes.get(a, [])
        if len(shape) != 4 or shapes.get(b) != shape or shape[0] != 1 or shape[1] % 2:
            raise ShuffleRewriteError(f"{concat.name}: halves of shapes {shapes.get(a)} and {shapes.get(b)}")
        half = shape[1]
        prefix = f"stream_worker/shuffle_{count}"
        added = replacing.setdefault(id(merge_reshape), [])
        a_shape = f"{prefix}/a_shape"
        added.append(helper.make_node("Shape", [a], [a_shape], name=a_shape))
        users = consumers.get(merge_reshape.output[0], [])
        outputs = _half_slices(graph, users, 2 * half)
        if outputs is None:  # used whole: one interleave of a and b
            whole_shape = f"{prefix}/whole_shape"
            added.append(helper.make_node("Mul", [a_shape, doubling], [whole_shape], name=whole_shape))
            parts, targets = [[a, b]], [(merge_reshape.output[0], whole_shape)]
        else:  # used in halves: each half interleaves a half of a with a half of b
            if half % 2:
                raise ShuffleRewriteError(f"{concat.name}: halves of {half} channels cannot be halved")
            quarter = half // 2
            pieces = {}
            for tensor, label in ((a, "a"), (b, "b")):
                pieces[label] = [f"{prefix}/{label}{h}" for h in range(2)]
                added.append(
                    helper.make_node(
                        "Split",
                        [tensor],
                        pieces[label],
                        name=f"{prefix}/split_{label}",
                        axis=1,
                        split=[quarter] * 2,
                    )
                )
            parts = [[pieces["a"][h], pieces["b"][h]] for h in range(2)]
            targets = [(outputs[h], a_shape) for h in range(2)]
            removed.update(id(node) for node in users)
        for h, ((x, y), (output, target)) in enumerate(zip(parts, targets, strict=True)):
            stacked = []
            for tensor, label in ((x, "x"), (y, "y")):
                stacked.append(f"{prefix}/{h}/{label}_unsqueezed")
                added.append(
                    helper.make_node("Unsqueeze", [tensor], [stacked[-1]], name=stacked[-1], axes=[2])
                )
            interleaved = f"{prefix}/{h}/interleaved"
            added.append(helper.make_node("Concat", stacked, [interleaved], name=interleaved, axis=2))
            added.append(
                helper.make_node("Reshape", [interleaved, target], [output], name=f"{prefix}/{h}/merged")
            )
        removed.update(id(node) for node in (concat, split_reshape, transpose, merge_reshape))
        count += 1
    nodes = [
        new
        for node in graph.node
        for new in replacing.get(id(node), [node] if id(node) not in removed else [])
    ]
    del graph.node[:]
    graph.node.extend(nodes)
    return count
