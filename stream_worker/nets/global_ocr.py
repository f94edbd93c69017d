"""Place fast-plate-ocr's CCT (`cct_xs_v1_global.onnx`, facts in shared/MODELS.md) for Triton as `global_ocr`.

The published graph already takes what the BLS sends (`input` uint8 RGB `[batch, 64, 128, 3]`, the
1/255 scaling inside) and answers the softmax per slot `[batch, 9, 37]`; only its output is named by
tf2onnx (`Identity:0`). The copy renames it `probabilities` and the batch dimensions `batch`, so the
configs and the contract (`plate_recognition/1/contract.py`) state plain names, and is checked with
ONNX Runtime against the published graph on a batch of crops before it replaces the artifact. Needs
`onnx` and `onnxruntime` (the export extra), never torch.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.placing import place_checked

INPUT_NAME = "input"
OUTPUT_NAME = "probabilities"
BATCH_DIM = "batch"
INPUT_SHAPE = (64, 128, 3)
OUTPUT_SHAPE = (9, 37)
# Renaming changes no arithmetic: the copy must answer exactly what the source answers.
MAX_ERROR = 0.0
CHECK_BATCH = 4

log = logging.getLogger(__name__)


class GlobalOcrGraphError(ModelPrepareError):
    """The published graph is not the one this module knows, or its copy answers differently."""


def rename(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph with its one output named OUTPUT_NAME and the batch dimensions named BATCH_DIM."""
    (graph_input,), (graph_output,) = model.graph.input, model.graph.output
    shapes = {
        INPUT_NAME: [d.dim_value for d in graph_input.type.tensor_type.shape.dim[1:]],
        "output": [d.dim_value for d in graph_output.type.tensor_type.shape.dim[1:]],
    }
    if graph_input.name != INPUT_NAME or shapes != {
        INPUT_NAME: list(INPUT_SHAPE),
        "output": list(OUTPUT_SHAPE),
    }:
        raise GlobalOcrGraphError(
            f"global_ocr: expected input {INPUT_NAME!r} [N,{','.join(map(str, INPUT_SHAPE))}] and one "
            f"output [N,{','.join(map(str, OUTPUT_SHAPE))}], got {graph_input.name!r} {shapes}"
        )
    old = graph_output.name
    for node in model.graph.node:
        node.output[:] = [OUTPUT_NAME if name == old else name for name in node.output]
        node.input[:] = [OUTPUT_NAME if name == old else name for name in node.input]
    graph_output.name = OUTPUT_NAME
    for value in (graph_input, graph_output):
        value.type.tensor_type.shape.dim[0].dim_param = BATCH_DIM
    return model


def check_crops() -> np.ndarray:
    """A fixed batch of random crops (any pixels will do: the check compares two graphs)."""
    generator = np.random.default_rng(34)
    return generator.integers(0, 256, (CHECK_BATCH, *INPUT_SHAPE), dtype=np.uint8)


def max_error_vs_source(source: Path, copy: Path, crops: np.ndarray) -> float:
    def run(path: Path) -> np.ndarray:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, {INPUT_NAME: crops})[0]

    return float(np.abs(run(source) - run(copy)).max())


def place_global_ocr(source: Path, target: Path) -> float:
    """Write the renamed graph of `source` to `target` (replaced atomically, only once it answers as the
    source does); returns the measured difference."""
    diff = place_checked(
        rename(onnx.load(str(source))),
        target,
        lambda copy: max_error_vs_source(source, copy, check_crops()),
        lambda diff: (
            None
            if diff <= MAX_ERROR
            else GlobalOcrGraphError(
                f"global_ocr: the renamed graph differs from {source.name} by {diff:.3g}; "
                f"{target} left unchanged."
            )
        ),
    )
    log.info("placed %s -> %s (renamed output %r)", source.name, target, OUTPUT_NAME)
    return diff
