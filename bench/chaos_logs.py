"""What the logs of a `bench chaos` run tell: a Triton backend stub failing, the workers' findings."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path

# Lines of Triton's log that tell of a backend stub failing (a crash caused by input would).
STUB_LOG_PATTERNS = ("not healthy", "Stub process", "Segmentation fault", "core dumped", "terminate called")


def triton_log_findings(log_path: Path) -> list[str]:
    """Lines of Triton's log that tell of a backend stub failing."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line[:300] for line in lines if any(pattern in line for pattern in STUB_LOG_PATTERNS)]


def worker_log_findings(log_paths: Iterable[Path]) -> dict[str, int]:
    """How often the workers' logs tell of Triton's absence or refusal, and of a traceback."""
    counts = {"Triton unavailable, retrying": 0, "Triton rejected a batch": 0, "Traceback": 0}
    for log_path in log_paths:
        with contextlib.suppress(OSError):
            text = log_path.read_text(errors="replace")
            for pattern in counts:
                counts[pattern] += text.count(pattern)
    return counts
