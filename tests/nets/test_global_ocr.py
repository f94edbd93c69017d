"""Placing fast-plate-ocr's CCT as `global_ocr`: plain names, the same answers, a foreign graph refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from stream_worker.nets import global_ocr
from stream_worker.nets.weights import PINNED_FILES
from tests.conftest import weights_dir

SOURCE = weights_dir() / PINNED_FILES["global_ocr"].file_name


def test_the_placed_graph_answers_as_the_published_one(tmp_path: Path) -> None:
    target = tmp_path / "global_ocr" / "1" / "model.onnx"
    assert global_ocr.place_global_ocr(SOURCE, target) == 0.0
    crops = np.random.default_rng(7).integers(0, 256, (3, 64, 128, 3), dtype=np.uint8)
    assert global_ocr.max_error_vs_source(SOURCE, target, crops) == 0.0
    assert target.stat().st_mode & 0o777 == 0o644
    assert [o.name for o in onnx.load(str(target)).graph.output] == ["probabilities"]


def test_a_graph_of_another_shape_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["input"], ["Identity:0"])],
        "not_the_cct",
        [helper.make_tensor_value_info("input", TensorProto.UINT8, ["N", 32, 128, 3])],
        [helper.make_tensor_value_info("Identity:0", TensorProto.UINT8, ["N", 32, 128, 3])],
    )
    source = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]), str(source))
    target = tmp_path / "repository" / "model.onnx"
    with pytest.raises(global_ocr.GlobalOcrGraphError, match=r"expected input 'input' \[N,64,128,3\]"):
        global_ocr.place_global_ocr(source, target)
    assert not target.exists()
