"""A test whose tool or data set is missing skips on a developer's machine and fails under CI
(`.ci/run` sets CI=true): `support.require`, which every such test goes through, run in a real
pytest of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
NEEDS = """
from support import require, require_module

def test_a_tool():
    require(False, "the frobnicator is not installed")

def test_a_module():
    require_module("no_such_module_here")

def test_present():
    require(True, "never said")
"""


def _run(tmp_path: Path, ci: str) -> str:
    (tmp_path / "test_needs.py").write_text(NEEDS)
    env = {
        **os.environ,
        "CI": ci,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-rsf",
            "-q",
            "test_needs.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize("ci", ["", "false"])
def test_a_missing_tool_skips_outside_ci(tmp_path: Path, ci: str) -> None:
    output = _run(tmp_path, ci)
    assert "1 passed, 2 skipped" in output, output
    assert "the frobnicator is not installed" in output


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_missing_tool_fails_under_ci(tmp_path: Path, ci: str) -> None:
    output = _run(tmp_path, ci)
    assert "2 failed, 1 passed" in output, output
    assert "the frobnicator is not installed (CI=true: required here" in output
    assert "no_such_module_here" in output
