"""What one evaluation run was asked to do; recorded in its JSON report so runs can be compared."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from stream_worker.triton_client import TritonTLS


class EvalSettings(BaseModel):
    model_config = ConfigDict(frozen=True)

    folder: Path
    region: str | None = None  # None: the folder's own (see evaluation/plan.py)
    raw: bool = False  # score the recognizers' unconstrained reads, not the format reading
    detector_scales: tuple[float, ...] = ()  # as a camera's setting; (): Triton's default
    url: str | None = None  # None: export the models if needed and start the local Triton
    tls: TritonTLS | None = None  # for `url` only: the local Triton speaks plain text
    repository: Path = Path("model_repository")  # served by the local Triton
    weights_dir: Path | None = None  # checkpoints for the local Triton; None: the default folder
    batch_size: int = Field(8, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    min_found: float | None = Field(None, ge=0, le=1)
    min_exact: float | None = Field(None, ge=0, le=1)
    report: Path | None = None
    baseline: Path | None = None  # an earlier report of the folder: compared plate by plate
