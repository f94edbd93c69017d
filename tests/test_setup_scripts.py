"""The set-up comes in two parts: the demo's (`scripts/setup.sh`, Python wheels only) never touches
apt, so a held apt lock or a missing root cannot stop it; the test servers' (`scripts/test-servers.sh`,
run by `scripts/test.sh`) waits for a held apt/dpkg lock, naming its holder, instead of failing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"
HOLD = """
import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _commands(script: Path) -> list[str]:
    return [
        line.strip()
        for line in script.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.parametrize("name", ["setup.sh", "demo.sh"])
def test_the_demos_set_up_needs_no_apt_and_no_root(name: str) -> None:
    for line in _commands(SCRIPTS / name):
        assert not re.search(r"\b(apt|apt-get|apt-cache|dpkg|dpkg-query|sudo|id -u)\b", line), (
            f"{name}: {line}"
        )


def test_the_test_command_installs_the_test_servers_before_the_tests() -> None:
    commands = _commands(SCRIPTS / "test.sh")
    setup, servers = commands.index("bash scripts/setup.sh"), commands.index("bash scripts/test-servers.sh")
    pytest_line = next(i for i, line in enumerate(commands) if line.startswith("pytest "))
    assert setup < servers < pytest_line


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A file whose fcntl lock (the kind apt and dpkg take) another process holds for 3 s."""
    path = tmp_path / "lock-frontend"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), "3"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    yield path, holder
    holder.kill()
    holder.wait()


def _wait_for(lock: Path, timeout_s: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "bash",
            "-c",
            f'source scripts/test-servers.sh && APT_LOCK_TIMEOUT_S={timeout_s} wait_for_apt_locks "$0"',
            lock,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_held_apt_lock_is_waited_for_with_its_holder_named(
    held_lock: tuple[Path, subprocess.Popen[str]],
) -> None:
    lock, holder = held_lock
    result = _wait_for(lock, 30)
    assert result.returncode == 0, result.stderr
    assert "waiting for another apt/dpkg process to finish" in result.stderr
    assert f"PID {holder.pid} " in result.stderr and str(lock) in result.stderr
    assert holder.poll() is not None, "returned while the lock was still held"


def test_a_lock_held_past_the_timeout_fails_clearly(held_lock: tuple[Path, subprocess.Popen[str]]) -> None:
    lock, holder = held_lock
    result = _wait_for(lock, 1)
    assert result.returncode == 1
    assert "still holds its lock after 1 s; giving up" in result.stderr
    assert f"PID {holder.pid} " in result.stderr


def test_a_free_lock_is_not_waited_for(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.touch()
    result = _wait_for(lock, 1)
    assert result.returncode == 0 and result.stderr == ""
