"""`models prepare`: verify the pinned weights and turn them into the Triton model repository's ONNX files.

`stn` and `lprnet` are exported from their PyTorch checkpoints (export.py, needs torch);
`plate_detector` is rewritten from the published ONNX graph (detector_graph.py, needs only onnx);
`global_ocr` is the published ONNX graph with its output renamed (global_ocr.py, needs only onnx);
LPRNet also gets an INT8 graph beside its FP32 one, `model.int8.onnx` (quantize.py), which the
serving code runs instead on CPUs with VNNI (model_repository/lprnet/1/graphs.py).
Idempotent: a stamp JSON beside each graph records the source file's sha256, the build format and
the graphs it was built from; when all still match (and the ONNX file is the one stamped) nothing
is rebuilt. The build
modules are imported only when a build is actually needed, so serving hosts need neither torch nor
onnx, and rebuilding only the detector never imports torch. Every built graph is checked to hold no
denormal float weights (denormals.py) before it is stamped; one that does is removed.
"""

from __future__ import annotations

import importlib
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import orjson

from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.weights import PINNED_FILES, ensure_weights, sha256_of

# Bump whenever export.py (or a network it exports) changes what it writes (opset, graph shape, names,
# weights), to force re-export. 3: LPRNet's channel pools as 2-D MaxPool + Slice. 4: LPRNet's INT8 graph.
EXPORT_FORMAT_VERSION = 4
# Bump whenever detector_graph.py changes what it writes (input layout, names, shapes), to force a rewrite.
DETECTOR_FORMAT_VERSION = 5  # 5: channel shuffles interleaved without a transpose
# Bump whenever global_ocr.py changes what it writes.
GLOBAL_OCR_FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
STAMP_FILE = "model.stamp.json"
INT8_FILE = "model.int8.onnx"
INT8_STAMP_FILE = "model.int8.stamp.json"
MODEL_VERSION = "1"
EXPORT_EXTRA = "pip install 'stream-worker[export]'"
BUILD_PACKAGES = {"torch", "onnx", "onnxscript", "onnxruntime"}

log = logging.getLogger(__name__)


def _builder(model: str, module: str) -> ModuleType:
    """The build module `stream_worker.nets.<module>`, or a clear error naming the missing package."""
    try:
        return importlib.import_module(f"stream_worker.nets.{module}")
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package in BUILD_PACKAGES:
            raise ModelPrepareError(
                f"Building {model}/{MODEL_VERSION}/{MODEL_FILE} needs the '{package}' package, which is not "
                f"installed. Install the export extra: {EXPORT_EXTRA}"
            ) from error
        raise


def _export_checkpoint(model: str, source: Path, target: Path) -> float:
    return _builder(model, "export").export_net(model, source, target).max_abs_diff


def _check_no_denormal_weights(model: str, target: Path) -> None:
    """Raise (and remove `target`, so nothing serves it) when the built graph holds denormal weights."""
    try:
        _builder(model, "denormals").check_no_denormal_weights(model, target)
    except ModelPrepareError:
        target.unlink(missing_ok=True)
        raise


def _rewrite_detector(model: str, source: Path, target: Path) -> float:
    return _builder(model, "detector_graph").build_detector(source, target)


def _place_global_ocr(model: str, source: Path, target: Path) -> float:
    return _builder(model, "global_ocr").place_global_ocr(source, target)


def _quantize_lprnet(model: str, source: Path, target: Path) -> float:
    """From the FP32 graph beside `target` and the STN's (built before it: see ARTIFACTS' order)."""
    repository = target.parents[2]
    return _builder(model, "quantize").quantize_lprnet(
        artifact_path(repository, "lprnet"), artifact_path(repository, "stn"), target
    )


@dataclass(frozen=True)
class Artifact:
    """How one graph is built from its model's pinned weights file, and what its stamp says."""

    format_version: int
    diff_key: str  # the stamp key of the check the build measured, named after its reference
    build: Callable[[str, Path, Path], float]  # (model, source, target) -> that check's figure
    model: str  # the model folder, and the pinned weights file it is built from
    file: str = MODEL_FILE
    stamp: str = STAMP_FILE
    inputs: tuple[str, ...] = ()  # artifacts it is built from: rebuilt when one of them changes


ARTIFACTS: dict[str, Artifact] = {
    "stn": Artifact(EXPORT_FORMAT_VERSION, "max_abs_diff_vs_torch", _export_checkpoint, "stn"),
    "lprnet": Artifact(EXPORT_FORMAT_VERSION, "max_abs_diff_vs_torch", _export_checkpoint, "lprnet"),
    "lprnet_int8": Artifact(
        EXPORT_FORMAT_VERSION,
        "argmax_agreement_vs_fp32",
        _quantize_lprnet,
        "lprnet",
        INT8_FILE,
        INT8_STAMP_FILE,
        inputs=("lprnet", "stn"),
    ),
    "plate_detector": Artifact(
        DETECTOR_FORMAT_VERSION, "max_error_vs_source", _rewrite_detector, "plate_detector"
    ),
    "global_ocr": Artifact(GLOBAL_OCR_FORMAT_VERSION, "max_error_vs_source", _place_global_ocr, "global_ocr"),
}


def artifact_path(repository: Path, name: str) -> Path:
    """Where artifact `name` (a model's name for its `model.onnx`) lies in `repository`."""
    artifact = ARTIFACTS.get(name)
    model, file = (artifact.model, artifact.file) if artifact else (name, MODEL_FILE)
    return repository / model / MODEL_VERSION / file


def _read_stamp(path: Path) -> dict | None:
    try:
        stamp = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _input_hashes(repository: Path, artifact: Artifact) -> dict[str, str]:
    return {name: sha256_of(artifact_path(repository, name)) for name in artifact.inputs}


def _is_current(repository: Path, artifact: Artifact, source_sha256: str) -> bool:
    model = repository / artifact.model / MODEL_VERSION / artifact.file
    stamp = _read_stamp(model.parent / artifact.stamp)
    return (
        stamp is not None
        and stamp.get("checkpoint_sha256") == source_sha256
        and stamp.get("export_format") == artifact.format_version
        and model.is_file()
        and stamp.get("onnx_sha256") == sha256_of(model)
        and stamp.get("inputs_sha256", {}) == _input_hashes(repository, artifact)
    )


def _write_stamp(path: Path, stamp: dict) -> None:
    handle, temp_name = tempfile.mkstemp(prefix=".stamp.", suffix=".part", dir=path.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(orjson.dumps(stamp, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.chmod(temp_name, 0o644)
    os.replace(temp_name, path)


def prepare_models(
    weights_dir: Path, repository: Path, download: bool = False, base_url: str | None = None
) -> None:
    """Write `repository/<model>/1/model.onnx` for every model of ARTIFACTS from the verified weights in
    `weights_dir`.

    With `download`, missing or corrupt files are first fetched from their pinned URLs (or from the
    mirror `base_url`). Raises ModelPrepareError (with what, where and how to fix) on any failure.
    """
    sources = ensure_weights(Path(weights_dir), download=download, base_url=base_url)
    repository = Path(repository)
    for name, artifact in ARTIFACTS.items():
        pinned = PINNED_FILES[artifact.model]
        model = artifact_path(repository, name)
        if _is_current(repository, artifact, pinned.sha256):
            log.info("%s is up to date (%s)", model, artifact.stamp)
            continue
        diff = artifact.build(artifact.model, sources[artifact.model], model)
        _check_no_denormal_weights(artifact.model, model)
        stamp = {
            "checkpoint": pinned.file_name,
            "checkpoint_sha256": pinned.sha256,
            "export_format": artifact.format_version,
            "onnx_sha256": sha256_of(model),
            artifact.diff_key: diff,
        }
        if artifact.inputs:
            stamp["inputs_sha256"] = _input_hashes(repository, artifact)
        _write_stamp(model.parent / artifact.stamp, stamp)
