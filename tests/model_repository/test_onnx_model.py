"""The shared ONNX Runtime model (lprnet/1/model.py, linked by stn and plate_detector), with a stand-in
for Triton's `triton_python_backend_utils`: requests merged into one run, split back, dtype kept."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.model_repository.conftest import load_model_file


class _Tensor:
    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name, self.array = name, array

    def as_numpy(self) -> np.ndarray:
        return self.array


class _Response:
    def __init__(self, output_tensors: list[_Tensor] | None = None, error: Exception | None = None) -> None:
        self.output_tensors, self.error = output_tensors or [], error


def _pb_utils() -> types.ModuleType:
    module = types.ModuleType("triton_python_backend_utils")
    module.Tensor = _Tensor
    module.InferenceResponse = _Response
    module.TritonError = RuntimeError
    module.get_input_tensor_by_name = lambda request, name: request[name]
    return module


def _uint8_model(version_dir: Path) -> None:
    """A stand-in for the detector: uint8 frames [B, 2, 3] -> float32 sums per frame [B, 1]."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["images"], ["pixels"], to=TensorProto.FLOAT),
            helper.make_node("ReduceSum", ["pixels", "axes"], ["detections"], keepdims=0),
        ],
        "uint8_stub",
        [helper.make_tensor_value_info("images", TensorProto.UINT8, ["batch", 2, 3])],
        [helper.make_tensor_value_info("detections", TensorProto.FLOAT, ["batch"])],
        [helper.make_tensor("axes", TensorProto.INT64, [2], [1, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    version_dir.mkdir(parents=True)
    onnx.save(model, version_dir / "model.onnx")


def test_uint8_requests_are_batched_in_their_own_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _pb_utils())
    _uint8_model(tmp_path / "1")
    model = load_model_file("plate_detector", "model").TritonPythonModel()
    config = {
        "input": [{"name": "images"}],
        "output": [{"name": "detections"}],
        "parameters": {"intra_op_threads": {"string_value": "1"}},
    }
    model.initialize(
        {"model_config": json.dumps(config), "model_repository": str(tmp_path), "model_version": "1"}
    )
    frames = [np.full((count, 2, 3), 200, np.uint8) for count in (1, 3)]
    responses = model.execute([{"images": _Tensor("images", batch)} for batch in frames])
    assert [response.error for response in responses] == [None, None]
    assert [response.output_tensors[0].array.tolist() for response in responses] == [[1200.0], [1200.0] * 3]


def _scaling_model(path: Path, factor: float) -> None:
    """float32 [B, 2] -> [B, 2] times `factor`: tells which of two graphs ran."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["input", "factor"], ["output"])],
        "scaling_stub",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])],
        [helper.make_tensor("factor", TensorProto.FLOAT, [], [factor])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def test_the_int8_graph_runs_where_the_cpu_has_vnni(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LPRNet's config names its INT8 graph; model.py runs it on a VNNI CPU, model.onnx elsewhere."""
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _pb_utils())
    (tmp_path / "1").mkdir()
    _scaling_model(tmp_path / "1" / "model.onnx", 1.0)
    _scaling_model(tmp_path / "1" / "model.int8.onnx", 2.0)
    model = load_model_file("lprnet", "model").TritonPythonModel()
    config = {
        "input": [{"name": "input"}],
        "output": [{"name": "output"}],
        "parameters": {"int8_model": {"string_value": "model.int8.onnx"}},
    }
    model.initialize(
        {"model_config": json.dumps(config), "model_repository": str(tmp_path), "model_version": "1"}
    )
    graphs = load_model_file("lprnet", "graphs")
    vnni = bool(graphs.cpu_flags() & graphs.VNNI_FLAGS)
    print("this CPU has VNNI:", vnni)
    assert model.graph_file == ("model.int8.onnx" if vnni else "model.onnx")
    (response,) = model.execute([{"input": _Tensor("input", np.ones((1, 2), np.float32))}])
    assert response.output_tensors[0].array.tolist() == [[2.0, 2.0] if vnni else [1.0, 1.0]]
