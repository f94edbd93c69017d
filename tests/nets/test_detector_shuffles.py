"""Channel shuffles rebuilt as interleaves: the same floats as the Transpose they replace, on small
graphs shaped as the detector's blocks and on the real detector (test_detector_graph.py)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from stream_worker.nets.detector_shuffles import ShuffleRewriteError, interleave_channel_shuffles

HALF, HEIGHT, WIDTH = 8, 5, 7  # each input of the Concat: [1, 8, 5, 7]


def _block(users: str, opset: int = 12) -> onnx.ModelProto:
    """a, b -> Concat -> Reshape [1, 2, 8, H, W] -> Transpose(0, 2, 1, 3, 4) -> Reshape [1, 16, H, W],
    then (`users`) "halves": two Slices [0, 8) and [8, 16) each through a Relu; "whole": a Relu;
    "odd": Slices [0, 4) and [4, 16)."""
    constants = {
        "split_shape": [1, 2, HALF, HEIGHT, WIDTH],
        "merge_shape": [1, 2 * HALF, HEIGHT, WIDTH],
        "axes": [1],
        "zero": [0],
        "half": [4 if users == "odd" else HALF],
        "end": [2 * HALF],
    }
    nodes = [
        helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
        helper.make_node("Reshape", ["cat", "split_shape"], ["grouped"]),
        helper.make_node("Transpose", ["grouped"], ["swapped"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["swapped", "merge_shape"], ["shuffled"]),
    ]
    if users == "whole":
        nodes.append(helper.make_node("Relu", ["shuffled"], ["first"]))
        outputs = ["first"]
    else:
        nodes += [
            helper.make_node("Slice", ["shuffled", "half", "end", "axes"], ["upper"]),
            helper.make_node("Slice", ["shuffled", "zero", "half", "axes"], ["lower"]),
            helper.make_node("Relu", ["lower"], ["first"]),
            helper.make_node("Relu", ["upper"], ["second"]),
        ]
        outputs = ["first", "second"]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, HALF, HEIGHT, WIDTH]) for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n", "c", "h", "w"]) for n in outputs],
        [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in constants.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    inferred = onnx.shape_inference.infer_shapes(model)
    infos = [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]
    return {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim] for info in infos}


def _run(model: onnx.ModelProto, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"a": a, "b": b})


def _rewritten(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    count = interleave_channel_shuffles(copy, _shapes(model))
    onnx.checker.check_model(copy, full_check=True)
    return copy, count


@pytest.mark.parametrize("users", ["halves", "whole"])
def test_the_interleave_gives_the_shuffles_floats_without_a_transpose(users: str) -> None:
    model = _block(users)
    rewritten, count = _rewritten(model)
    assert count == 1
    assert not [node for node in rewritten.graph.node if node.op_type == "Transpose"]
    assert not [node for node in rewritten.graph.node if node.op_type == "Slice"]
    rng = np.random.default_rng(7)
    for _ in range(3):
        a, b = (rng.standard_normal((1, HALF, HEIGHT, WIDTH)).astype(np.float32) for _ in range(2))
        for expected, actual in zip(_run(model, a, b), _run(rewritten, a, b), strict=True):
            assert actual.shape == expected.shape
            assert actual.tobytes() == expected.tobytes()


def test_other_batches_and_sizes_take_their_shape_at_run_time() -> None:
    """The rewrite keeps no literal batch, height or width: a batch of 3 at another size runs too."""
    model = _block("halves")
    rewritten, _ = _rewritten(model)
    for value in rewritten.graph.input:
        dims = value.type.tensor_type.shape.dim
        for index, name in ((0, "batch"), (2, "height"), (3, "width")):
            dims[index].dim_param = name
    a, b = (np.arange(3 * HALF * 4 * 9, dtype=np.float32).reshape(3, HALF, 4, 9) + k for k in (0, 1000))
    # the source's literal targets only fit batch 1 at 5x7: compare with the shuffle done in numpy
    shuffled = np.stack([a, b], axis=2).reshape(3, 2 * HALF, 4, 9)
    lower, upper = _run(rewritten, a, b)
    np.testing.assert_array_equal(lower, shuffled[:, :HALF])
    np.testing.assert_array_equal(upper, shuffled[:, HALF:])


def test_a_shuffle_cut_elsewhere_than_in_halves_is_interleaved_whole() -> None:
    model = _block("odd")
    rewritten, count = _rewritten(model)
    assert count == 1
    assert [node.op_type for node in rewritten.graph.node].count("Slice") == 2
    a, b = (
        np.random.default_rng(k).standard_normal((1, HALF, HEIGHT, WIDTH)).astype(np.float32) for k in (1, 2)
    )
    for expected, actual in zip(_run(model, a, b), _run(rewritten, a, b), strict=True):
        assert actual.tobytes() == expected.tobytes()


def test_a_newer_opset_is_refused() -> None:
    model = _block("halves", opset=13)
    with pytest.raises(ShuffleRewriteError, match="opset 12"):
        interleave_channel_shuffles(model, _shapes(model))
