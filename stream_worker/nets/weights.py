"""The pinned STN and LPRNet checkpoints: where to find them, how to verify them, how to fetch them.

The checkpoints are never shipped with the project. They come from the MIT-licensed repository
`EgShes/one_task_multiple_infras` (commit c981015b9de7, Copyright (c) 2023 shes) and are checked
against pinned sha256 sums, so a truncated or swapped file is caught before it is exported.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from stream_worker.nets.errors import ModelPrepareError

WEIGHTS_DIR_ENV = "LPR_WEIGHTS_DIR"
UPSTREAM_BASE_URL = (
    "https://raw.githubusercontent.com/EgShes/one_task_multiple_infras/"
    "c981015b9de734173fd02f3de65ce6ea046fde36/nn/nn/weights"
)
DOWNLOAD_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Checkpoint:
    name: str
    file_name: str
    sha256: str


CHECKPOINTS: dict[str, Checkpoint] = {
    "stn": Checkpoint("stn", "stn.pth", "4b42329b16c1c2a1c90444cb64dce04f6f3c5e32fa97fa07c4eaa9dec52a0f01"),
    "lprnet": Checkpoint(
        "lprnet", "lprnet.pth", "369ff38f6afa894628e6675f448fa0ff87d532fe1f099e6fc3b9a0fd2a8570b4"
    ),
}


class WeightsError(ModelPrepareError):
    """A checkpoint is missing, corrupt or could not be downloaded."""


def default_weights_dir() -> Path:
    """`$LPR_WEIGHTS_DIR`, else a per-user cache folder (where `--download` puts the files)."""
    if configured := os.environ.get(WEIGHTS_DIR_ENV):
        return Path(configured)
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache_home / "stream-worker" / "weights"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _problem(weights_dir: Path, checkpoint: Checkpoint) -> str | None:
    """Why this checkpoint in `weights_dir` is unusable, or None when it is present and intact."""
    path = weights_dir / checkpoint.file_name
    if not path.is_file():
        return f"{path}: missing"
    actual = sha256_of(path)
    if actual != checkpoint.sha256:
        return f"{path}: corrupt (sha256 {actual}, expected {checkpoint.sha256})"
    return None


def verify_weights(weights_dir: Path) -> dict[str, Path]:
    """Paths of all pinned checkpoints in `weights_dir`; raises WeightsError listing every problem."""
    problems = [p for c in CHECKPOINTS.values() if (p := _problem(weights_dir, c)) is not None]
    if problems:
        raise WeightsError(
            f"Model weights unusable in {weights_dir.resolve()}:\n  "
            + "\n  ".join(problems)
            + f"\nSet {WEIGHTS_DIR_ENV} (or --weights-dir) to the folder holding "
            + ", ".join(c.file_name for c in CHECKPOINTS.values())
            + ", or run `stream-worker models prepare --download` to fetch them from "
            + f"{UPSTREAM_BASE_URL} (MIT licence, EgShes/one_task_multiple_infras)."
        )
    return {name: weights_dir / c.file_name for name, c in CHECKPOINTS.items()}


def download_checkpoint(checkpoint: Checkpoint, weights_dir: Path, base_url: str = UPSTREAM_BASE_URL) -> Path:
    """Fetch one checkpoint into `weights_dir`; it appears only once complete and verified."""
    weights_dir.mkdir(parents=True, exist_ok=True)
    url = f"{base_url.rstrip('/')}/{checkpoint.file_name}"
    target = weights_dir / checkpoint.file_name
    handle, temp_name = tempfile.mkstemp(prefix=f".{checkpoint.file_name}.", suffix=".part", dir=weights_dir)
    temp_path = Path(temp_name)
    try:
        with (
            os.fdopen(handle, "wb") as out,
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response,
        ):
            while chunk := response.read(1 << 20):
                out.write(chunk)
        actual = sha256_of(temp_path)
        if actual != checkpoint.sha256:
            raise WeightsError(
                f"Downloaded {url} has sha256 {actual}, expected {checkpoint.sha256}; not installed."
            )
        os.replace(temp_path, target)
    except (urllib.error.URLError, OSError) as error:
        raise WeightsError(f"Could not download {url} to {target}: {error}") from error
    finally:
        temp_path.unlink(missing_ok=True)
    return target


def ensure_weights(
    weights_dir: Path, download: bool = False, base_url: str = UPSTREAM_BASE_URL
) -> dict[str, Path]:
    """Verified checkpoint paths; with `download`, first fetch any that are missing or corrupt."""
    if download:
        for checkpoint in CHECKPOINTS.values():
            if _problem(weights_dir, checkpoint) is not None:
                download_checkpoint(checkpoint, weights_dir, base_url)
    return verify_weights(weights_dir)
