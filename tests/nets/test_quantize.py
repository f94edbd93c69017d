"""LPRNet's INT8 graph (quantize.py), as `models prepare` writes it beside the FP32 one."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import orjson
import pytest

from stream_worker.nets import quantize
from stream_worker.nets.prepare import INT8_STAMP_FILE, artifact_path, prepare_models
from stream_worker.nets.synthetic_plates import synthetic_plate_crops
from stream_worker.nets.weights import sha256_of
from tests.conftest import weights_dir
from tests.model_repository.conftest import load_model_file


def _run(path: Path, inputs: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": inputs})[0]


def test_prepare_writes_the_int8_graph_beside_the_fp32_one(exported_repository: Path) -> None:
    int8 = artifact_path(exported_repository, "lprnet_int8")
    assert int8 == exported_repository / "lprnet" / "1" / "model.int8.onnx"
    stamp = orjson.loads((int8.parent / INT8_STAMP_FILE).read_bytes())
    print("lprnet INT8 stamp", stamp)
    assert stamp["onnx_sha256"] == sha256_of(int8)
    assert stamp["argmax_agreement_vs_fp32"] >= quantize.MIN_ARGMAX_AGREEMENT
    assert stamp["inputs_sha256"] == {
        name: sha256_of(artifact_path(exported_repository, name)) for name in ("lprnet", "stn")
    }
    model = onnx.load(str(int8))
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("QuantizeLinear") >= 10 and ops.count("DequantizeLinear") >= 10
    # The head stays float: the Conv after the Concat takes its weights as they are.
    (concat,) = [node for node in model.graph.node if node.op_type == "Concat"]
    (head,) = [node for node in model.graph.node if node.op_type == "Conv" and concat.output[0] in node.input]
    assert head.input[1] in {tensor.name for tensor in model.graph.initializer}


def test_int8_reads_the_van_plate_as_fp32(
    exported_repository: Path, plate_crop: np.ndarray, other_crops: np.ndarray
) -> None:
    frames = load_model_file("plate_recognition", "frames")
    crops = np.concatenate([plate_crop[None], other_crops])
    rectified = _run(artifact_path(exported_repository, "stn"), crops)
    fp32 = _run(artifact_path(exported_repository, "lprnet"), rectified)
    int8 = _run(artifact_path(exported_repository, "lprnet_int8"), rectified)
    texts = [frames.ctc_greedy_decode(logits)[0] for logits in (fp32[0], int8[0])]
    print("van plate FP32 / INT8:", texts)
    assert texts[0] == texts[1]
    agreement = float((fp32.argmax(axis=1) == int8.argmax(axis=1)).mean())
    print("argmax agreement over the van's and 32 other crops:", agreement)
    assert agreement > 0.8  # the other crops hold no plate: their steps are near ties (seen: 0.88)


def test_the_float_head_is_found_by_structure(exported_repository: Path) -> None:
    model = onnx.load(str(artifact_path(exported_repository, "lprnet")))
    head = set(quantize.float_head_nodes(model))
    assert sorted(node.op_type for node in model.graph.node if node.name in head) == ["AveragePool"] * 3 + [
        "Concat",
        "Conv",
    ]


def test_synthetic_plates_are_reproducible() -> None:
    first, again = synthetic_plate_crops(4, seed=3), synthetic_plate_crops(4, seed=3)
    assert first.shape == (4, 3, 24, 94) and first.dtype == np.float32
    assert np.array_equal(first, again)
    assert -1.0 <= first.min() < first.max() <= 1.0
    assert not np.array_equal(first, synthetic_plate_crops(4, seed=4))


def test_int8_is_rebuilt_when_a_graph_it_comes_from_changes(
    exported_repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository = Path(shutil.copytree(exported_repository, tmp_path / "repository", symlinks=True))
    built: list[Path] = []

    def fake_quantize(fp32: Path, stn: Path, target: Path) -> float:
        built.append(target)
        shutil.copyfile(fp32, target)
        return 1.0

    monkeypatch.setattr(quantize, "quantize_lprnet", fake_quantize)
    prepare_models(weights_dir(), repository)
    assert built == []
    stamp_path = repository / "lprnet" / "1" / INT8_STAMP_FILE
    stamp = orjson.loads(stamp_path.read_bytes())
    stamp["inputs_sha256"]["stn"] = "0" * 64  # as if the STN had been exported anew since
    stamp_path.write_bytes(orjson.dumps(stamp))
    prepare_models(weights_dir(), repository)
    assert built == [artifact_path(repository, "lprnet_int8")]
