"""`models prepare`: verify the pinned checkpoints and export them into the Triton model repository.

Idempotent: a stamp JSON beside each `model.onnx` records the checkpoint's sha256 and the export
format; when both still match (and the ONNX file is the one stamped) nothing is exported. torch is
imported only when an export is actually needed, so serving hosts never need it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from types import ModuleType

import orjson

from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.weights import CHECKPOINTS, UPSTREAM_BASE_URL, ensure_weights, sha256_of

# Bump whenever export.py changes what it writes (opset, graph shape, names), to force re-export.
EXPORT_FORMAT_VERSION = 1
MODEL_FILE = "model.onnx"
STAMP_FILE = "model.stamp.json"
MODEL_VERSION = "1"
EXPORT_EXTRA = "pip install 'stream-worker[export]'"

log = logging.getLogger(__name__)


def artifact_path(repository: Path, name: str) -> Path:
    return repository / name / MODEL_VERSION / MODEL_FILE


def _read_stamp(path: Path) -> dict | None:
    try:
        stamp = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _is_current(model: Path, checkpoint_sha256: str) -> bool:
    stamp = _read_stamp(model.parent / STAMP_FILE)
    return (
        stamp is not None
        and stamp.get("checkpoint_sha256") == checkpoint_sha256
        and stamp.get("export_format") == EXPORT_FORMAT_VERSION
        and model.is_file()
        and stamp.get("onnx_sha256") == sha256_of(model)
    )


def _write_stamp(path: Path, stamp: dict) -> None:
    handle, temp_name = tempfile.mkstemp(prefix=".stamp.", suffix=".part", dir=path.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(orjson.dumps(stamp, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.chmod(temp_name, 0o644)
    os.replace(temp_name, path)


def _exporter() -> ModuleType:
    """The torch-based export module, or a clear error naming the missing package."""
    try:
        from stream_worker.nets import export
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        if package in {"torch", "onnx", "onnxscript"}:
            raise ModelPrepareError(
                f"Exporting the networks to ONNX needs the '{package}' package, which is not installed. "
                f"Install the export extra: {EXPORT_EXTRA}"
            ) from error
        raise
    return export


def prepare_models(
    weights_dir: Path, repository: Path, download: bool = False, base_url: str = UPSTREAM_BASE_URL
) -> None:
    """Write `repository/{stn,lprnet}/1/model.onnx` from the verified checkpoints in `weights_dir`.

    With `download`, missing or corrupt checkpoints are first fetched from `base_url`.
    Raises ModelPrepareError (with what, where and how to fix) on any failure.
    """
    checkpoints = ensure_weights(Path(weights_dir), download=download, base_url=base_url)
    for name, checkpoint_path in checkpoints.items():
        checkpoint_sha256 = CHECKPOINTS[name].sha256
        model = artifact_path(Path(repository), name)
        if _is_current(model, checkpoint_sha256):
            log.info("%s is up to date (%s)", model, STAMP_FILE)
            continue
        report = _exporter().export_net(name, checkpoint_path, model)
        _write_stamp(
            model.parent / STAMP_FILE,
            {
                "checkpoint": CHECKPOINTS[name].file_name,
                "checkpoint_sha256": checkpoint_sha256,
                "export_format": EXPORT_FORMAT_VERSION,
                "onnx_sha256": sha256_of(model),
                "max_abs_diff_vs_torch": report.max_abs_diff,
            },
        )
