"""`stream-worker up` gives its console a read-only token for the CLI: `<data dir>/console.token`,
mode 0600, in no log, no status file, no output; `cameras status` without flags is answered by
the console with it (no note that the topic was read instead); the file is gone after the stop.
The real `up` (broker, Triton, every service)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from stream_worker.cameras.status import CameraStatus
from stream_worker.contracts import running_up
from stream_worker.contracts.topics import CAMERA_STATUS
from stream_worker.launchers.ports import free_port
from tests.up.test_up import REPO_ROOT, Up

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]


def status_record(camera_id: str) -> bytes:
    now = time.time()
    return CameraStatus(
        camera_id=camera_id, state="streaming", state_since=now - 30, last_error=None, source="rtsp://cam/1",
        replica="bench", updated_at=now, decoded_fps=5.0, published_fps=5.0, frames_decoded=1,
        frames_published=1, frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=0,
        motion_share=None, last_frame_at=now,
    ).to_json()  # fmt: skip


def cameras_status(up: Up) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAM_WORKER_")}
    env["XDG_STATE_HOME"] = str(up.state_home)  # where `up` points the CLI
    return subprocess.run(
        [sys.executable, "-m", "stream_worker", "cameras", "status", "--json"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def everything_written(up: Up) -> str:
    """up's output, its status file and every log, as text."""
    texts = [up.output_path.read_text(errors="replace"), (up.data_dir / "up.json").read_text()]
    texts += [
        path.read_text(errors="replace") for path in (up.data_dir / "logs").rglob("*") if path.is_file()
    ]
    return "\n".join(texts)


def test_up_gives_its_console_a_private_token_that_cameras_status_uses_and_removes_it(
    tmp_path: Path, prepared_model_repository: Path
) -> None:
    up = Up(tmp_path / "data", free_port(), free_port())
    try:
        status = up.wait_running()
        path = up.data_dir / running_up.CONSOLE_TOKEN_FILE
        assert path.stat().st_mode & 0o777 == 0o600
        token = running_up.read_token(path)
        assert token is not None and len(token) >= 40
        producer = Producer({"bootstrap.servers": status["bootstrap_servers"]})
        producer.produce(CAMERA_STATUS.name, key=b"gate-token", value=status_record("gate-token"))
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 60
        while True:
            started = time.perf_counter()
            answered = cameras_status(up)
            print(
                f"cameras status under up: {time.perf_counter() - started:.2f} s wall, load {os.getloadavg()}"
            )
            assert answered.returncode == 0, answered.stderr
            assert answered.stderr == "", answered.stderr  # no note: the console answered
            if "gate-token" in {orjson.loads(line)["camera_id"] for line in answered.stdout.splitlines()}:
                break
            assert time.monotonic() < deadline, "the console did not show the camera's status"
            time.sleep(1)
        assert token not in everything_written(up)
        assert up.stop() == 0, up.output()
        assert not path.exists()
        assert token not in everything_written(up)
    finally:
        up.close()
