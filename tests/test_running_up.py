"""The CLI finds a running `stream-worker up` (contracts/running_up.py): the pointer `up` writes,
STREAM_WORKER_UP, and what wins over them. The pointed-at status is written as `up` writes it; the
broker and the store are real."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from store_records import plate_sighting, sighting_id, stored_in

from stream_worker.contracts import running_up
from stream_worker.launchers.broker import LocalBroker, create_declared_topics
from stream_worker.up import status as up_status

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    monkeypatch.delenv(running_up.ENV, raising=False)
    for name in (
        "STREAM_WORKER_BOOTSTRAP_SERVERS",
        "STREAM_WORKER_STORE_DATA_DIR",
        "STREAM_WORKER_STORE_DATABASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


def _write_up(data_dir: Path, state: str, bootstrap: str, pid: int | None = None) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "up.json"
    fields: dict[str, object] = {
        "data_dir": str(data_dir),
        "bootstrap_servers": bootstrap,
        "console_url": "http://c/",
    }
    up_status.write(path, state, fields)
    if pid is not None:  # as if another process had written it
        document = up_status.read(path)
        up_status.write(path, state, {**fields, "children": document.get("children", {})})
        path.write_bytes(
            path.read_bytes().replace(f'"pid": {os.getpid()}'.encode(), f'"pid": {pid}'.encode())
        )
    return path


def test_the_pointer_leads_to_a_running_up_and_only_while_it_runs(state_home: Path, tmp_path: Path) -> None:
    assert running_up.running_up() is None
    status = _write_up(tmp_path / "d", "running", "127.0.0.1:1234")
    running_up.write_pointer(status)
    found = running_up.running_up()
    assert found == running_up.RunningUp(tmp_path / "d", "127.0.0.1:1234", "http://c/")
    _write_up(tmp_path / "d", "stopped", "127.0.0.1:1234")
    assert running_up.running_up() is None
    _write_up(tmp_path / "d", "running", "127.0.0.1:1234", pid=2**22 + 12345)  # no such process
    assert running_up.running_up() is None
    running_up.remove_pointer(tmp_path / "other" / "up.json")  # not ours: left
    assert running_up.pointer_path().exists()
    running_up.remove_pointer(status)
    assert not running_up.pointer_path().exists()


def test_stream_worker_up_names_the_data_directory(
    state_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running_up.write_pointer(_write_up(tmp_path / "a", "running", "127.0.0.1:1"))
    _write_up(tmp_path / "b", "running", "127.0.0.1:2")
    monkeypatch.setenv(running_up.ENV, str(tmp_path / "b"))
    found = running_up.running_up()
    assert found is not None and found.bootstrap_servers == "127.0.0.1:2"


@pytest.fixture
def broker() -> Iterator[LocalBroker]:
    with LocalBroker() as started:
        create_declared_topics(started.bootstrap_servers, ["cameras", "camera-status", "frames"], 1)
        yield started


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stream_worker", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.mark.integration
def test_the_cli_reaches_ups_broker_and_store_without_flags(
    state_home: Path, tmp_path: Path, broker: LocalBroker
) -> None:
    data_dir = tmp_path / "data"
    running_up.write_pointer(_write_up(data_dir, "running", broker.bootstrap_servers))
    listed = _cli("cameras", "list", "--timeout", "10")
    assert listed.returncode == 0, listed.stderr
    assert "Connection refused" not in listed.stderr
    # The broker flag and its variable win over the pointer.
    elsewhere = _cli("cameras", "list", "--timeout", "2", "--bootstrap-servers", "127.0.0.1:1")
    assert elsewhere.returncode != 0
    by_env = _cli("cameras", "list", "--timeout", "2", env={"STREAM_WORKER_BOOTSTRAP_SERVERS": "127.0.0.1:1"})
    assert by_env.returncode != 0

    migrated = _cli("store", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert (data_dir / "history.db").is_file()
    now = datetime.now(UTC)
    stored_in(
        data_dir,
        sightings=[
            plate_sighting("recent", "A111AA77", last_seen=now - timedelta(minutes=10), camera_id="gate"),
            plate_sighting("elsewhere", "B222BB77", last_seen=now - timedelta(minutes=5), camera_id="dash"),
            plate_sighting("old", "C333CC77", last_seen=now - timedelta(hours=3), camera_id="gate"),
        ],
    )
    recent = _cli("search", "--since", "1h", "--camera", "gate", "--json")
    assert recent.returncode == 0, recent.stderr
    assert [orjson.loads(line)["sighting_id"] for line in recent.stdout.splitlines()] == [
        sighting_id("recent")
    ]
    everything = _cli("search", "--json")
    assert len(everything.stdout.splitlines()) == 3
    other = _cli("search", "--data-dir", str(tmp_path / "none"))
    assert other.returncode != 0 and "no history store" in other.stderr
