"""The servers a benchmark runs against: the local Triton (ours plus the baseline repository)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from stream_worker.launchers.triton import LocalTriton

START_TIMEOUT_S = 600.0


def start_triton(
    repository: Path, baseline_repository: Path, model_config_name: str | None = None
) -> LocalTriton:
    """Triton serving `repository` and the baseline models side by side (same process, same cores)."""
    server = LocalTriton(
        repository, model_config_name=model_config_name, extra_repositories=[baseline_repository]
    )
    server.start(timeout_s=START_TIMEOUT_S)
    return server


def triton_version(http_url: str) -> str | None:
    """The server's own version string, from its metadata endpoint."""
    try:
        with urllib.request.urlopen(f"http://{http_url}/v2", timeout=5) as response:
            return json.loads(response.read()).get("version")
    except (OSError, ValueError):
        return None
