"""Ports for local servers: drawn below the ephemeral range, never handed to two processes within
the claim time, never one that something is bound to; the kernel picks when there is no room."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stream_worker.launchers import ports

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh claims folder for this test (ports.claims_dir() resolves under it)."""
    monkeypatch.setattr(ports.tempfile, "gettempdir", lambda: str(tmp_path))
    return tmp_path / f"stream-worker-ports-{os.getuid()}"


def test_the_ephemeral_range_is_read_from_the_kernel_or_defaulted(tmp_path: Path) -> None:
    path = tmp_path / "range"
    path.write_text("40000\t50000\n")
    assert ports.ephemeral_range(path) == (40000, 50000)
    path.write_text("garbage\n")
    assert ports.ephemeral_range(path) == ports.LINUX_EPHEMERAL
    assert ports.ephemeral_range(tmp_path / "missing") == ports.LINUX_EPHEMERAL


def test_ports_are_drawn_outside_the_ephemeral_range_and_above_the_well_known_ones() -> None:
    choices = ports.ports_to_draw_from((32768, 60999))
    assert choices == [*range(20000, 32768), *range(61000, 65536)]
    assert ports.ports_to_draw_from((22000, 60999)) == [*range(20000, 22000), *range(61000, 65536)]
    assert ports.ports_to_draw_from((1024, 65535)) == []  # no room: the kernel picks
    assert ports.ports_to_draw_from((20500, 65535)) == []  # 500 ports are too few to draw from


def test_a_claim_is_held_once_and_a_stale_one_is_cleared_not_taken(claims: Path) -> None:
    folder = ports.claims_dir()
    assert folder == claims and folder.is_dir() and (folder.stat().st_mode & 0o777) == 0o700
    assert ports.claim(folder, 25001)
    assert not ports.claim(folder, 25001)  # held: by this process or another
    later = (folder / "25001").stat().st_mtime + ports.CLAIM_S + 1
    assert not ports.claim(folder, 25001, now=later)  # stale: removed, not taken in the same call
    assert not (folder / "25001").exists()
    assert ports.claim(folder, 25001, now=later)
    assert ports.claim(None, 25001)  # no folder: nothing to coordinate with


def test_a_bound_port_is_not_bindable_and_a_closed_one_is() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert not ports.bindable(port)
    assert ports.bindable(port)


def test_free_port_skips_claimed_and_bound_ports(claims: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        bound, claimed, free = server.getsockname()[1], 25002, ports.kernel_pick()
        monkeypatch.setattr(ports, "ports_to_draw_from", lambda _ephemeral: [claimed, bound, free])
        assert ports.claim(ports.claims_dir(), claimed)  # another process's
        drawn = iter([claimed, bound, free])
        monkeypatch.setattr(ports.random, "choice", lambda _choices: next(drawn))
        assert ports.free_port() == free
    assert (claims / str(free)).exists()


def test_free_port_asks_the_kernel_when_there_is_no_room(
    claims: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))
    port = ports.free_port()
    assert ports.bindable(port) and (claims / str(port)).exists()


def test_free_ports_are_outside_the_ephemeral_range_and_distinct(claims: Path) -> None:
    low, high = ports.ephemeral_range()
    picked = [ports.free_port() for _ in range(300)]
    assert len(set(picked)) == 300
    assert all(not low <= port <= high and port >= ports.LOWEST for port in picked)


def test_processes_picking_at_once_never_get_the_same_port(tmp_path: Path, claims: Path) -> None:
    """Four interpreters draw 150 ports each at the same time from one claims folder (TMPDIR is
    where the fixture puts it)."""
    script = "from stream_worker.launchers.ports import free_port\nprint(*(free_port() for _ in range(150)))"
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    children = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    picked = [int(port) for child in children for port in child.communicate(timeout=60)[0].split()]
    assert all(child.returncode == 0 for child in children)
    assert len(picked) == 600 and len(set(picked)) == 600
    claimed = {int(path.name) for path in claims.iterdir()}
    assert set(picked) <= claimed  # and a drawn port found bound keeps its claim too
