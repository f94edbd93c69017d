"""Denormal weights: zeroed at export without changing the STN's output, and refused in any shipped graph."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper

from stream_worker.nets import export
from stream_worker.nets.denormals import DenormalWeightsError, check_no_denormal_weights, denormal_weights
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import STAMP_FILE, artifact_path, prepare_models
from tests.conftest import weights_dir

SHIPPED = ("stn", "lprnet", "plate_detector", "global_ocr")
TINY32 = float(np.finfo(np.float32).tiny)


def _matmul_graph(weight: np.ndarray, constant: np.ndarray | None = None) -> onnx.ModelProto:
    """x @ weight (+ a Constant node's value when given): the smallest graph with a weight."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    if constant is not None:
        nodes = [
            helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(constant, "c")),
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "c"], ["y"]),
        ]
    dtype = helper.np_dtype_to_tensor_dtype(weight.dtype)
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", dtype, [1, weight.shape[0]])],
        [helper.make_tensor_value_info("y", dtype, [1, weight.shape[1]])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    return helper.make_model(graph)


def _save(model: onnx.ModelProto, tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def test_a_denormal_initializer_is_refused_by_name(tmp_path: Path) -> None:
    weight = np.ones((4, 2), np.float32)
    weight[1, 0] = TINY32 / 4
    weight[2, 1] = -TINY32 / 1000
    path = _save(_matmul_graph(weight), tmp_path)
    with pytest.raises(
        DenormalWeightsError, match=r"stn: .* 2 denormal float weights .* in w \(2\)"
    ) as raised:
        check_no_denormal_weights("stn", path)
    assert isinstance(raised.value, ModelPrepareError)


def test_a_denormal_constant_node_and_float16_are_found() -> None:
    weight = np.ones((4, 2), np.float16)
    weight[0, 0] = np.float16(1e-6)  # below float16's smallest normal, 6.1e-5
    constant = np.array([[0.0, TINY32 / 2]], np.float32)
    assert denormal_weights(_matmul_graph(weight)) == {"w": 1}
    assert denormal_weights(_matmul_graph(np.ones((4, 2), np.float32), constant)) == {"c": 1}


def test_zeros_and_the_smallest_normal_pass(tmp_path: Path) -> None:
    weight = np.array([[0.0, TINY32], [-TINY32, 1e-30], [-0.0, 3.0]], np.float32)
    check_no_denormal_weights("lprnet", _save(_matmul_graph(weight), tmp_path))


@pytest.mark.parametrize("name", SHIPPED)
def test_no_shipped_graph_keeps_denormal_weights(exported_repository: Path, name: str) -> None:
    assert denormal_weights(onnx.load(str(artifact_path(exported_repository, name)))) == {}


def test_zeroing_leaves_the_stn_output_bit_identical(
    checkpoints: dict[str, Path], plate_crop: np.ndarray, other_crops: np.ndarray
) -> None:
    batch = torch.from_numpy(np.concatenate([plate_crop[None], other_crops]))
    original = export.load_net("stn", checkpoints["stn"])
    zeroed = export.load_net("stn", checkpoints["stn"])
    count = export.zero_denormal_weights(zeroed)
    total = sum(p.numel() for p in zeroed.parameters())
    print(f"stn: {count} of {total} weights were denormal")
    assert count > total // 3  # the published checkpoint is about half denormal
    with torch.no_grad():
        assert torch.equal(original(batch), zeroed(batch))
    assert export.zero_denormal_weights(zeroed) == 0


def test_prepare_refuses_and_removes_a_graph_with_denormal_weights(
    exported_repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = Path(shutil.copytree(exported_repository, tmp_path / "repository", symlinks=True))
    stn = artifact_path(repository, "stn")
    (stn.parent / STAMP_FILE).unlink()  # stale: prepare exports it again
    monkeypatch.setattr(export, "zero_denormal_weights", lambda module: 0)
    with pytest.raises(DenormalWeightsError, match=r"stn: .*localization\.3\.weight") as raised:
        prepare_models(weights_dir(), repository)
    print(raised.value)
    assert not stn.exists() and not (stn.parent / STAMP_FILE).exists()
