"""Export the STN and LPRNet checkpoints to ONNX with a dynamic batch axis, and prove the result.

Every export is checked against PyTorch with ONNX Runtime (CPU) on random batches before it
replaces the artifact, so a silently wrong graph never reaches Triton. Uses the dynamo exporter
(needs `onnxscript`) at opset 18: the graphs hold only Conv/Gemm/MatMul/MaxPool/AveragePool/
Slice/GridSample-style nodes that ONNX Runtime and TensorRT both take. Denormal weights are zeroed
before export (the STN checkpoint is half denormal; see denormals.py): the outputs stay the same.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.lprnet import LPRNet
from stream_worker.nets.stn import INPUT_HEIGHT, INPUT_WIDTH, STNet

OPSET = 18
INPUT_NAME = "input"
MAX_ABS_DIFF = 1e-4
CHECK_BATCH_SIZES = (1, 7)
MAX_BATCH = 4096

log = logging.getLogger(__name__)


class ExportCheckError(ModelPrepareError):
    """The exported ONNX graph does not reproduce the PyTorch module."""


@dataclass(frozen=True)
class NetSpec:
    build: Callable[[], nn.Module]
    output_name: str


NETS: dict[str, NetSpec] = {
    "stn": NetSpec(build=STNet, output_name="output"),
    "lprnet": NetSpec(build=LPRNet, output_name="logits"),
}


@dataclass(frozen=True)
class ExportReport:
    seconds: float
    max_abs_diff: float


def load_net(name: str, checkpoint: Path) -> nn.Module:
    """The named network in eval mode with the checkpoint loaded strictly (every key, every shape)."""
    module = NETS[name].build()
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)["net_state_dict"]
    module.load_state_dict(state, strict=True)
    return module.eval()


def zero_denormal_weights(module: nn.Module) -> int:
    """Set every float parameter and buffer with |w| below its dtype's smallest normal to 0, in place;
    returns how many were set."""
    zeroed = 0
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            if not tensor.is_floating_point():
                continue
            denormal = (tensor != 0) & (tensor.abs() < torch.finfo(tensor.dtype).tiny)
            zeroed += int(denormal.sum())
            tensor[denormal] = 0
    return zeroed


def random_batch(batch_size: int, seed: int = 0) -> torch.Tensor:
    """Inputs spanning the normalised pixel range [-1, 1]."""
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(batch_size, 3, INPUT_HEIGHT, INPUT_WIDTH, generator=generator) * 2 - 1


def max_abs_diff_vs_onnx(module: nn.Module, onnx_path: Path, batch_sizes: tuple[int, ...]) -> float:
    """Largest |PyTorch - ONNX Runtime| over random batches of the given sizes."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    worst = 0.0
    for batch_size in batch_sizes:
        batch = random_batch(batch_size, seed=batch_size)
        with torch.no_grad():
            expected = module(batch).numpy()
        (actual,) = session.run(None, {INPUT_NAME: batch.numpy()})
        if actual.shape != expected.shape:
            raise ExportCheckError(
                f"{onnx_path}: output shape {actual.shape}, PyTorch gives {expected.shape}"
            )
        worst = max(worst, float(np.abs(actual - expected).max()))
    return worst


@contextlib.contextmanager
def _exporter_chatter_to_debug_log() -> Iterator[None]:
    """The dynamo exporter prints progress and harmless warnings; keep them out of the CLI output."""
    printed = io.StringIO()
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    exporter_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
            warnings.simplefilter("ignore")
            yield
    finally:
        exporter_log.setLevel(level)
        log.debug("torch.onnx.export said:\n%s", printed.getvalue())


def export_net(name: str, checkpoint: Path, target: Path) -> ExportReport:
    """Export one network to `target` (replaced atomically, only once it matches PyTorch)."""
    spec = NETS[name]
    module = load_net(name, checkpoint)
    zeroed = zero_denormal_weights(module)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".model.", suffix=".onnx.part", dir=target.parent)
    os.close(handle)
    temp_path = Path(temp_name)
    try:
        started = time.perf_counter()
        with _exporter_chatter_to_debug_log():
            torch.onnx.export(
                module,
                (random_batch(2),),
                str(temp_path),
                input_names=[INPUT_NAME],
                output_names=[spec.output_name],
                dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=MAX_BATCH)}},
                opset_version=OPSET,
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        seconds = time.perf_counter() - started
        diff = max_abs_diff_vs_onnx(module, temp_path, CHECK_BATCH_SIZES)
        if not diff < MAX_ABS_DIFF:
            raise ExportCheckError(
                f"{name}: ONNX Runtime differs from PyTorch by {diff:.3g} (limit {MAX_ABS_DIFF}); "
                f"{target} left unchanged."
            )
        temp_path.chmod(0o644)  # readable by a Triton container running as another user
        os.replace(temp_path, target)
    finally:
        temp_path.unlink(missing_ok=True)
    log.info(
        "exported %s -> %s in %.1f s (max |onnx - torch| %.2g, %d denormal weights zeroed)",
        name,
        target,
        seconds,
        diff,
        zeroed,
    )
    return ExportReport(seconds=seconds, max_abs_diff=diff)
