"""The pinned weights files: where to find them, how to verify them, how to fetch them.

The weights are never shipped with the project. The STN and LPRNet checkpoints come from the
MIT-licensed repository `EgShes/one_task_multiple_infras` (commit c981015b9de7, Copyright (c) 2023
shes), the plate detector from the Apache-2.0 repository `szad670401/HyperLPR` (commit 58ad4ef736fe),
the recognizer of Latin-script plates (`cct_xs_v1_global.onnx`) from the MIT-licensed fast-plate-ocr
project (Copyright (c) 2024 ankandrew), for which no public URL is pinned: it is placed in the
weights folder by hand. Each file is checked against a pinned sha256, so a truncated or swapped file
is caught before it is turned into a Triton artifact.
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
CHECKPOINTS_BASE_URL = (
    "https://raw.githubusercontent.com/EgShes/one_task_multiple_infras/"
    "c981015b9de734173fd02f3de65ce6ea046fde36/nn/nn/weights"
)
DETECTOR_URL = (
    "https://raw.githubusercontent.com/szad670401/HyperLPR/"
    "58ad4ef736fec5289e8c8cb842e066e70c4672c3/resource/models/onnx/y5fu_640x_sim.onnx"
)
CHECKPOINTS_LICENCE = "MIT licence, EgShes/one_task_multiple_infras"
DETECTOR_LICENCE = "Apache-2.0, szad670401/HyperLPR"
GLOBAL_OCR_LICENCE = "MIT licence, ankandrew/fast-plate-ocr"
DOWNLOAD_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PinnedFile:
    """One weights file, keyed by the model it becomes: its name, checksum, upstream URL and licence."""

    name: str
    file_name: str
    sha256: str
    url: str | None  # None: no pinned public URL, `--download` cannot fetch it (a mirror can)
    licence: str

    @property
    def source(self) -> str:
        """Where to get it, for error messages."""
        return self.url or "no pinned public URL: copy the file into the weights folder"


PINNED_FILES: dict[str, PinnedFile] = {
    "stn": PinnedFile(
        "stn",
        "stn.pth",
        "4b42329b16c1c2a1c90444cb64dce04f6f3c5e32fa97fa07c4eaa9dec52a0f01",
        f"{CHECKPOINTS_BASE_URL}/stn.pth",
        CHECKPOINTS_LICENCE,
    ),
    "lprnet": PinnedFile(
        "lprnet",
        "lprnet.pth",
        "369ff38f6afa894628e6675f448fa0ff87d532fe1f099e6fc3b9a0fd2a8570b4",
        f"{CHECKPOINTS_BASE_URL}/lprnet.pth",
        CHECKPOINTS_LICENCE,
    ),
    "plate_detector": PinnedFile(
        "plate_detector",
        "y5fu_640x_sim.onnx",
        "0306de937471b87f56eb3f5620815e7e7058f8ab7428e0734fc64627cc4d716c",
        DETECTOR_URL,
        DETECTOR_LICENCE,
    ),
    "global_ocr": PinnedFile(
        "global_ocr",
        "cct_xs_v1_global.onnx",
        "c1ae2ae031b10f8ab7ed6e3cdaf8d9c753477e299dbad3579c8f705a7d882134",
        None,
        GLOBAL_OCR_LICENCE,
    ),
}


class WeightsError(ModelPrepareError):
    """A weights file is missing, corrupt or could not be downloaded."""


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


def _problem(weights_dir: Path, pinned: PinnedFile) -> str | None:
    """Why this file in `weights_dir` is unusable, or None when it is present and intact."""
    path = weights_dir / pinned.file_name
    if not path.is_file():
        return f"{path}: missing"
    actual = sha256_of(path)
    if actual != pinned.sha256:
        return f"{path}: corrupt (sha256 {actual}, expected {pinned.sha256})"
    return None


def verify_weights(weights_dir: Path) -> dict[str, Path]:
    """Paths of all pinned files in `weights_dir`; raises WeightsError listing every problem."""
    unusable = {p.name: problem for p in PINNED_FILES.values() if (problem := _problem(weights_dir, p))}
    if unusable:
        raise WeightsError(
            f"Model weights unusable in {weights_dir.resolve()}:\n  "
            + "\n  ".join(unusable.values())
            + f"\nSet {WEIGHTS_DIR_ENV} (or --weights-dir) to the folder holding "
            + ", ".join(p.file_name for p in PINNED_FILES.values())
            + ", or run `stream-worker models prepare --download` to fetch them from their pinned URLs:\n  "
            + "\n  ".join(
                f"{p.file_name}: {p.source} ({p.licence})"
                for p in PINNED_FILES.values()
                if p.name in unusable
            )
        )
    return {name: weights_dir / p.file_name for name, p in PINNED_FILES.items()}


def download_weights_file(pinned: PinnedFile, weights_dir: Path, base_url: str | None = None) -> Path:
    """Fetch one file into `weights_dir`; it appears only once complete and verified.

    `base_url`: a mirror holding every file under its file name, instead of the pinned URL.
    """
    url = f"{base_url.rstrip('/')}/{pinned.file_name}" if base_url else pinned.url
    if url is None:
        raise WeightsError(
            f"{pinned.file_name} has no pinned public URL to download from ({pinned.licence}): copy it "
            f"into {weights_dir.resolve()} (sha256 {pinned.sha256}), or give a mirror that holds it."
        )
    weights_dir.mkdir(parents=True, exist_ok=True)
    target = weights_dir / pinned.file_name
    handle, temp_name = tempfile.mkstemp(prefix=f".{pinned.file_name}.", suffix=".part", dir=weights_dir)
    temp_path = Path(temp_name)
    try:
        with (
            os.fdopen(handle, "wb") as out,
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response,
        ):
            while chunk := response.read(1 << 20):
                out.write(chunk)
        actual = sha256_of(temp_path)
        if actual != pinned.sha256:
            raise WeightsError(
                f"Downloaded {url} has sha256 {actual}, expected {pinned.sha256}; not installed."
            )
        os.replace(temp_path, target)
    except (urllib.error.URLError, OSError) as error:
        raise WeightsError(f"Could not download {url} to {target}: {error}") from error
    finally:
        temp_path.unlink(missing_ok=True)
    return target


def ensure_weights(weights_dir: Path, download: bool = False, base_url: str | None = None) -> dict[str, Path]:
    """Verified weights paths; with `download`, first fetch any that are missing or corrupt.

    `base_url`: fetch from this mirror instead of each file's pinned URL (see download_weights_file).
    """
    if download:
        for pinned in PINNED_FILES.values():
            if _problem(weights_dir, pinned) is not None:
                download_weights_file(pinned, weights_dir, base_url)
    return verify_weights(weights_dir)
