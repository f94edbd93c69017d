"""plate_recognition/1/heap.py: glibc keeps freed frame buffers mapped (no page faults per request)."""

from __future__ import annotations

import subprocess
import sys

from tests.model_repository.conftest import MODEL_REPOSITORY

# A request's wave: 16 decoded 1080p frames (6 MB each) held together, then freed; three waves.
CHURN = """
import resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "keep":
    import heap
    assert heap.keep_freed_memory(128 * 2**20)
def wave():
    frames = [np.empty((1080, 1920, 3), np.uint8) for _ in range(16)]
    for frame in frames:
        frame.fill(1)
wave()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
wave(); wave()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    folder = str(MODEL_REPOSITORY / "plate_recognition" / "1")
    result = subprocess.run(
        [sys.executable, "-c", CHURN, folder, mode], capture_output=True, text=True, check=True, timeout=60
    )
    return int(result.stdout)


def test_freed_frame_buffers_are_reused_without_page_faults() -> None:
    """Fresh processes: two waves after a first one fault their 190 MB in again by default, and
    (nearly) not at all once `keep_freed_memory` has set glibc's thresholds."""
    default, kept = _faults("default"), _faults("keep")
    pages = 2 * 16 * 1080 * 1920 * 3 // 4096
    print(f"minor page faults for 2 waves of 16 x 6 MB: default {default}, kept {kept} ({pages} pages)")
    # numpy asks for huge pages on large arrays, so one fault may map 2 MB: count in 4 KB pages' tenths
    assert default > pages // 10
    assert kept < pages // 100
