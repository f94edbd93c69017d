"""The local Triton launcher: start-up checks (no server) and start/stop/restart/serve (real server)."""

from __future__ import annotations

import mmap
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stream_worker.launchers.ports import free_port
from stream_worker.launchers.triton import (
    SHM_REGION_PREFIX,
    LocalTriton,
    TritonLaunchError,
    _copy_replacing,
    build_backend_directory,
    check_artifacts,
    check_numpy_version,
    find_libpython,
    python_version_tag,
    remove_stale_shm_regions,
)


@pytest.mark.parametrize("version", ["2.0.0", "2.3.1"])
def test_numpy_2_is_refused_with_the_fix(version: str) -> None:
    with pytest.raises(TritonLaunchError, match=rf"numpy {version} .*pip install 'numpy<2'"):
        check_numpy_version(version)


def test_numpy_1_is_accepted_and_missing_numpy_is_refused() -> None:
    check_numpy_version("1.26.4")
    with pytest.raises(TritonLaunchError, match="numpy is not installed"):
        check_numpy_version(None)


def test_missing_libpython_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TritonLaunchError, match=r"libpython3\.11\.so\.1\.0 not found.*libpython3\.11"):
        find_libpython("3.11", [tmp_path], ldconfig_listing="")


def test_libpython_is_found_in_a_search_dir_or_the_ld_cache(tmp_path: Path) -> None:
    library = tmp_path / "libpython3.11.so.1.0"
    library.write_bytes(b"")
    assert find_libpython("3.11", [tmp_path / "empty", tmp_path], ldconfig_listing="") == library
    listing = f"\tlibpython3.11.so.1.0 (libc6,x86-64) => {library}\n"
    assert find_libpython("3.11", [], ldconfig_listing=listing) == library


def test_missing_artifacts_say_to_run_models_prepare(tmp_path: Path) -> None:
    (tmp_path / "stn" / "1").mkdir(parents=True)
    (tmp_path / "lprnet" / "1").mkdir(parents=True)
    (tmp_path / "lprnet" / "1" / "model.onnx").write_bytes(b"onnx")
    with pytest.raises(TritonLaunchError, match=r"stn/1/model\.onnx.*stream-worker models prepare") as error:
        check_artifacts(tmp_path)
    assert "lprnet" not in str(error.value)


def test_missing_detector_says_to_run_models_prepare(tmp_path: Path) -> None:
    for name in ("stn", "lprnet", "plate_detector"):
        (tmp_path / name / "1").mkdir(parents=True)
    for name in ("stn", "lprnet"):
        (tmp_path / name / "1" / "model.onnx").write_bytes(b"onnx")
    with pytest.raises(
        TritonLaunchError, match=r"plate_detector/1/model\.onnx.*stream-worker models prepare"
    ) as error:
        check_artifacts(tmp_path)
    assert "y5fu_640x_sim.onnx" in str(error.value) and "--download" in str(error.value)


def test_missing_global_recognizer_says_to_run_models_prepare(tmp_path: Path) -> None:
    for name in ("stn", "lprnet", "plate_detector", "global_ocr"):
        (tmp_path / name / "1").mkdir(parents=True)
    for name in ("stn", "lprnet", "plate_detector"):
        (tmp_path / name / "1" / "model.onnx").write_bytes(b"onnx")
    with pytest.raises(
        TritonLaunchError, match=r"global_ocr/1/model\.onnx.*stream-worker models prepare"
    ) as error:
        check_artifacts(tmp_path)
    assert "cct_xs_v1_global.onnx" in str(error.value)


def test_backend_directory_holds_the_backend_and_the_stub(tmp_path: Path) -> None:
    python = build_backend_directory(tmp_path, python_version_tag()) / "python"
    assert (python / "libtriton_python.so").is_file()
    assert os.access(python / "triton_python_backend_stub", os.X_OK)
    with pytest.raises(TritonLaunchError, match=r"no Python backend stub for Python 2\.7"):
        build_backend_directory(tmp_path, "2.7")


def test_start_on_a_missing_repository_reports_the_server_log(tmp_path: Path) -> None:
    server = LocalTriton(tmp_path / "no-such-repository")
    with pytest.raises(TritonLaunchError, match="exited with code") as error:
        server.start(timeout_s=120)
    assert "no-such-repository" in str(error.value)
    assert not server.is_running()
    server.close()


@pytest.mark.integration
def test_restart_on_the_same_ports(prepared_model_repository: Path) -> None:
    with LocalTriton(prepared_model_repository) as server:
        ports = (server.grpc_port, server.http_port, server.metrics_port)
        assert server.is_ready()
        server.stop()
        assert not server.is_running() and not server.is_ready()
        server.start()
        assert server.is_ready()
        assert (server.grpc_port, server.http_port, server.metrics_port) == ports
    assert not server.is_running()


def test_stale_shm_regions_are_removed_and_held_ones_kept(tmp_path: Path) -> None:
    stale = [tmp_path / f"{SHM_REGION_PREFIX}{name}" for name in ("a", "b")]
    mapped, opened = tmp_path / f"{SHM_REGION_PREFIX}mapped", tmp_path / f"{SHM_REGION_PREFIX}open"
    other = tmp_path / "not_a_region"
    for path in (*stale, mapped, opened, other):
        path.write_bytes(b"\0" * 4096)
    with mapped.open("r+b") as file:
        mapping = mmap.mmap(file.fileno(), 4096)  # stays mapped once the file is closed
    try:
        with opened.open("rb"):
            removed = remove_stale_shm_regions(tmp_path)
    finally:
        mapping.close()
    assert sorted(removed) == sorted(path.name for path in stale)
    assert not any(path.exists() for path in stale)
    assert mapped.exists() and opened.exists() and other.exists()
    assert remove_stale_shm_regions(tmp_path / "missing") == []


def test_copy_replaces_a_binary_that_is_still_running(tmp_path: Path) -> None:
    """A killed server's stubs run on from the backend folder: the next start must still copy."""
    target = tmp_path / "stub"
    shutil.copy2("/bin/sleep", target)
    running = subprocess.Popen([str(target), "30"])
    try:
        with pytest.raises(OSError, match="Text file busy"):
            shutil.copy2("/bin/sleep", target)
        _copy_replacing(Path("/bin/sleep"), target)
        assert target.read_bytes() == Path("/bin/sleep").read_bytes()
    finally:
        running.kill()
        running.wait()


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry.name))
    return members


@pytest.mark.integration
def test_restart_after_sigkill_kills_the_orphaned_stubs_and_removes_their_shared_memory(
    prepared_model_repository: Path,
) -> None:
    with LocalTriton(prepared_model_repository) as server:
        pgid = server.pid
        assert pgid is not None
        stubs = [pid for pid in _group_members(pgid) if pid != pgid]
        assert stubs, "the Python backend stubs run in the server's process group"
        os.kill(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while server.is_running() and time.monotonic() < deadline:
            time.sleep(0.1)
        # Stubs notice their server's death only after a while, so some may already be gone.
        assert set(_group_members(pgid)) <= set(stubs), "no new process joins the dead server's group"
        server.start()
        assert server.is_ready()
        assert _group_members(pgid) == []
        # A stub that notices the server's death in time exits and removes its own region, so the
        # count left behind is not known (CI once saw 9 of 10 removed); some are, since most stubs
        # outlive the restart, and every region removed is gone.
        assert server.removed_shm_regions
        assert not any(Path("/dev/shm", name).exists() for name in server.removed_shm_regions)


@pytest.mark.integration
def test_triton_command_serves_until_sigterm_and_exits_0(prepared_model_repository: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "stream_worker",
        "triton",
        "--repository",
        str(prepared_model_repository),
    ]
    command += [
        "--grpc-port",
        str(free_port()),
        "--http-port",
        str(free_port()),
        "--metrics-port",
        str(free_port()),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if "Triton ready" in line:
                break
        assert lines and "Triton ready" in lines[-1], "".join(lines)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    finally:
        if process.poll() is None:
            process.kill()
