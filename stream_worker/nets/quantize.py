"""LPRNet in INT8 for CPUs that multiply int8 fast (VNNI): ONNX Runtime static QDQ quantization.

On an AMD EPYC Zen 4 (AVX-512 VNNI, one thread) the INT8 graph costs about 0.6x the FP32 one's CPU
time and reads every plate of the evaluation sets as FP32 does (docs/performance.md). Weights are
int8 per output channel, activations uint8 (the u8s8 pair ONNX Runtime's VNNI kernels take; int8
activations were no faster than FP32 there). The global-context head stays float: its average
pools, the concatenation of per-sample normalised features of very different ranges (one int8 scale
over all of them loses the small ones) and the 1x1 convolution after it, together under 1% of the
multiplies. Activation ranges are calibrated on synthetic plates (synthetic_plates.py) rectified
by the exported STN, so the build needs nothing but the checkpoints.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import (
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.shape_inference import quant_pre_process

from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.synthetic_plates import synthetic_plate_crops

INPUT_NAME = "input"
CALIBRATION_PLATES = 512
CALIBRATION_SEED = 1
CALIBRATION_RUN = 32
# Float head: these ops, and every Conv fed by a Concat.
FLOAT_OPS = frozenset({"AveragePool", "Concat"})
# The INT8 graph must agree with FP32 on the calibration plates' logits' argmax at least this often
# (seen: 0.99); a broken quantization falls far below.
MIN_ARGMAX_AGREEMENT = 0.95

log = logging.getLogger(__name__)


class QuantizeCheckError(ModelPrepareError):
    """The INT8 graph does not reproduce the FP32 one closely enough."""


class _Batches(CalibrationDataReader):
    def __init__(self, inputs: np.ndarray) -> None:
        self._runs = iter(
            [{INPUT_NAME: inputs[i : i + CALIBRATION_RUN]} for i in range(0, len(inputs), CALIBRATION_RUN)]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._runs, None)


def _run(path: Path, inputs: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.concatenate(
        [
            session.run(None, {INPUT_NAME: inputs[i : i + CALIBRATION_RUN]})[0]
            for i in range(0, len(inputs), CALIBRATION_RUN)
        ]
    )


def float_head_nodes(model: onnx.ModelProto) -> list[str]:
    """The names of the nodes left in float: FLOAT_OPS and the convolutions reading a Concat."""
    concatenated = {out for node in model.graph.node if node.op_type == "Concat" for out in node.output}
    return [
        node.name
        for node in model.graph.node
        if node.op_type in FLOAT_OPS or (node.op_type == "Conv" and concatenated & set(node.input))
    ]


def calibration_inputs(stn: Path) -> np.ndarray:
    """LPRNet's calibration inputs: synthetic plates as the exported STN rectifies them."""
    return _run(stn, synthetic_plate_crops(CALIBRATION_PLATES, seed=CALIBRATION_SEED))


def argmax_agreement(fp32: Path, int8: Path, inputs: np.ndarray) -> float:
    """The share of (plate, time step) whose best class is the same in both graphs."""
    return float((_run(fp32, inputs).argmax(axis=1) == _run(int8, inputs).argmax(axis=1)).mean())


def quantize_lprnet(fp32: Path, stn: Path, target: Path) -> float:
    """Write LPRNet's INT8 graph to `target` (atomically, only once it passes the check) from its FP32
    graph and the STN's; returns the argmax agreement with FP32 on the calibration plates."""
    inputs = calibration_inputs(stn)
    with tempfile.TemporaryDirectory(prefix="quantize-", dir=target.parent) as work:
        prepared = Path(work) / "prepared.onnx"
        quantized = Path(work) / "int8.onnx"
        quant_pre_process(str(fp32), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared),
            str(quantized),
            _Batches(inputs),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=float_head_nodes(onnx.load(str(prepared))),
        )
        agreement = argmax_agreement(fp32, quantized, inputs)
        if agreement < MIN_ARGMAX_AGREEMENT:
            raise QuantizeCheckError(
                f"lprnet INT8: argmax agrees with FP32 on {agreement:.3f} of the calibration plates' steps "
                f"(limit {MIN_ARGMAX_AGREEMENT}); {target} left unchanged."
            )
        quantized.chmod(0o644)
        os.replace(quantized, target)
    log.info("quantized lprnet -> %s (argmax agreement with FP32 %.4f)", target, agreement)
    return agreement
