"""Denormal (subnormal) float weights: find them in an ONNX graph and refuse to ship a graph with any.

A weight below the smallest normal float (`np.finfo(dtype).tiny`) adds nothing measurable to a
network's output, yet CPUs that handle subnormal operands in microcode pay for every multiply with
one: the published STN checkpoint is half denormal, and its graph cost 26x as much CPU on an Intel
Sapphire Rapids as with those weights zeroed (the same on an AMD EPYC Zen 4, which handles them in
hardware). Needs only numpy and onnx, so the detector and recognizer checks never import torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from stream_worker.nets.errors import ModelPrepareError


class DenormalWeightsError(ModelPrepareError):
    """An ONNX graph about to be shipped still holds denormal float weights."""


def denormal_mask(values: np.ndarray) -> np.ndarray:
    """True where `values` (any numpy float dtype) is non-zero and below its dtype's smallest normal."""
    tiny = np.finfo(values.dtype).tiny
    return (values != 0) & (np.abs(values) < tiny)


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """Every constant tensor of a graph: initializers, Constant nodes' values, and those of subgraphs."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                yield attribute.t
            elif attribute.type == onnx.AttributeProto.GRAPH:
                yield from _graph_tensors(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _graph_tensors(subgraph)


def denormal_weights(model: onnx.ModelProto) -> dict[str, int]:
    """How many denormal values each float constant tensor of `model` holds (only tensors with any)."""
    found: dict[str, int] = {}
    for tensor in _graph_tensors(model.graph):
        values = numpy_helper.to_array(tensor)
        if not np.issubdtype(values.dtype, np.floating):
            continue
        if count := int(denormal_mask(values).sum()):
            found[tensor.name or "<unnamed constant>"] = count
    return found


def check_no_denormal_weights(name: str, path: Path) -> None:
    """Raise DenormalWeightsError naming every tensor of the graph at `path` that holds denormals."""
    found = denormal_weights(onnx.load(str(path)))
    if found:
        listed = ", ".join(f"{tensor} ({count})" for tensor, count in sorted(found.items()))
        raise DenormalWeightsError(
            f"{name}: {path} holds {sum(found.values())} denormal float weights (|w| below the dtype's "
            f"smallest normal, slow on many CPUs) in {listed}; zero them before export "
            f"(export.zero_denormal_weights) and run `stream-worker models prepare` again."
        )
