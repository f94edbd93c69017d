"""up.json is replaced whole (never half written) and names its writer; one `up` per data dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stream_worker.up import status
from stream_worker.up.options import UpError


def test_the_status_is_written_whole_with_its_writer(tmp_path: Path) -> None:
    path = tmp_path / "up.json"
    status.write(path, "running", {"children": {"worker": {"pids": [12]}}})
    status.write(path, "stopped", {"children": {}})
    document = status.read(path)
    assert document["state"] == "stopped" and document["pid"] == os.getpid()
    assert document["children"] == {} and "updated_at" in document
    assert sorted(p.name for p in tmp_path.iterdir()) == ["up.json"]


def test_a_second_up_on_the_same_data_dir_is_refused_and_named(tmp_path: Path) -> None:
    lock_path = tmp_path / "up.lock"
    program = (
        "import pathlib, sys; from stream_worker.up.status import DataDirLock; "
        f"lock = DataDirLock(pathlib.Path({str(lock_path)!r})); lock.acquire(); "
        "print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(UpError, match=f"in use by another `stream-worker up` \\(pid {holder.pid}\\)"):
            status.DataDirLock(lock_path).acquire()
    finally:
        holder.communicate("")
    lock = status.DataDirLock(lock_path)
    lock.acquire()  # free again once its holder has exited
    lock.release()
