"""The ONNX artifacts: names, dynamic batch axis, TensorRT-friendly ops, and agreement with PyTorch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from stream_worker.nets import export
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import artifact_path

OUTPUTS = {"stn": ("output", [3, 24, 94]), "lprnet": ("logits", [23, 18])}


def _session(repository: Path, name: str) -> ort.InferenceSession:
    return ort.InferenceSession(str(artifact_path(repository, name)), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", ["stn", "lprnet"])
def test_graph_signature_and_ops(exported_repository: Path, name: str) -> None:
    model = onnx.load(str(artifact_path(exported_repository, name)))
    onnx.checker.check_model(model, full_check=True)
    session = _session(exported_repository, name)
    (model_input,), (model_output,) = session.get_inputs(), session.get_outputs()
    output_name, output_dims = OUTPUTS[name]
    assert (model_input.name, model_input.type) == ("input", "tensor(float)")
    assert model_input.shape[1:] == [3, 24, 94] and isinstance(model_input.shape[0], str)
    assert (model_output.name, model_output.shape[1:]) == (output_name, output_dims)
    assert isinstance(model_output.shape[0], str)
    assert "AffineGrid" not in {node.op_type for node in model.graph.node}


def test_lprnet_pools_stay_2d(exported_repository: Path) -> None:
    """A 5-D MaxPool makes ONNX Runtime convert LPRNet's blocked (NCHWc) tensors to NCHW and back
    around every channel pool: about 10% of its CPU time (docs/performance.md)."""
    model = onnx.load(str(artifact_path(exported_repository, "lprnet")))
    pools = [node for node in model.graph.node if node.op_type == "MaxPool"]
    kernels = [
        list(onnx.helper.get_attribute_value(a))
        for p in pools
        for a in p.attribute
        if a.name == "kernel_shape"
    ]
    assert kernels == [[3, 3]] * 3
    assert not {"Unsqueeze", "Squeeze"} & {node.op_type for node in model.graph.node}


@pytest.mark.parametrize("batch_size", [1, 7])
@pytest.mark.parametrize("name", ["stn", "lprnet"])
def test_onnx_matches_pytorch(
    exported_repository: Path,
    checkpoints: dict[str, Path],
    plate_crop: np.ndarray,
    other_crops: np.ndarray,
    name: str,
    batch_size: int,
) -> None:
    batch = np.concatenate([plate_crop[None], other_crops])[:batch_size]
    with torch.no_grad():
        expected = export.load_net(name, checkpoints[name])(torch.from_numpy(batch)).numpy()
    (actual,) = _session(exported_repository, name).run(None, {"input": batch})
    diff = float(np.abs(actual - expected).max())
    print(f"{name} batch {batch_size}: max |onnx - torch| = {diff:.3g}")
    assert actual.shape == expected.shape
    assert diff < 1e-4


def test_onnx_lprnet_is_batch_invariant(
    exported_repository: Path, plate_crop: np.ndarray, other_crops: np.ndarray
) -> None:
    session = _session(exported_repository, "lprnet")
    (alone,) = session.run(None, {"input": plate_crop[None]})
    (batched,) = session.run(None, {"input": np.concatenate([other_crops, plate_crop[None]])})
    assert float(np.abs(alone[0] - batched[-1]).max()) < 1e-4


def test_export_that_disagrees_with_pytorch_fails_and_keeps_the_old_file(
    tmp_path: Path, checkpoints: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "stn" / "1" / "model.onnx"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"previous artifact")
    monkeypatch.setattr(export, "MAX_ABS_DIFF", 0.0)
    with pytest.raises(export.ExportCheckError, match="differs from PyTorch") as raised:
        export.export_net("stn", checkpoints["stn"], target)
    assert isinstance(raised.value, ModelPrepareError)
    assert target.read_bytes() == b"previous artifact"
    assert [p.name for p in target.parent.iterdir()] == ["model.onnx"]
