"""`stream-worker cameras status` under a running `up` asks its console (which follows the status
topic in memory) with up's read-only token, and prints what it would have read from the topic;
when the console is not there or refuses, one line on stderr says why and the topic is read; a
broker or topic given on the command line is read, the console not asked.

The console is the real app served by the store's console thread on the real broker; `up` is its
status file (`up.json`, as `up` writes it, naming this process) and its token file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
from confluent_kafka import Producer

from stream_worker.cameras.status import CameraStatus
from stream_worker.contracts import running_up
from stream_worker.contracts.topics import CAMERA_STATUS
from stream_worker.launchers.ports import free_port
from stream_worker.service.compacted import ensure_compacted_topic
from stream_worker.store.console_thread import start_console
from stream_worker.up import status as up_status

from .conftest import CLOSED_BROKER, TOKENS, make_console, topics_of

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[3]
# The CLI with its arguments after -c, saying at exit which heavy modules it imported: the Kafka
# client, the contracts' pydantic models (building them is most of the CLI's start).
HEAVY_MODULES_AT_EXIT = """
import atexit, sys
MODELS = {"alerts", "base", "cameras", "corrections", "events", "frames", "ids", "notify", "schemas",
          "sightings", "visits", "watchlist"}
def heavy():
    return sorted(m for m in sys.modules if m == "confluent_kafka"
                  or (m.startswith("stream_worker.contracts.") and m.rsplit(".", 1)[1] in MODELS))
atexit.register(lambda: print("heavy modules:", heavy(), file=sys.stderr))
from stream_worker.cli import app
app(sys.argv[1:], prog_name="stream-worker")
"""


def record(camera_id: str, updated_at: float, state: str = "streaming") -> bytes:
    return CameraStatus(
        camera_id=camera_id, state=state, state_since=updated_at - 60.5, last_error="EOFError: ended",
        source="rtsp://${CAM_USER}@cam/1", replica="r1", updated_at=updated_at, decoded_fps=5.0,
        published_fps=2.5, frames_decoded=10, frames_published=5, frames_static=1, frames_dropped=2,
        delivery_errors=0, reconnects=3, motion_share=0.25, last_frame_at=updated_at - 0.5,
        static_markers=4, offered_fps=5.0, frames_offered=9, frames_shed=4, delay_s=1.25, max_delay_s=5.0,
    ).to_json()  # fmt: skip


def write_statuses(bootstrap: str, topic: str, cameras: list[str], gone: str = "gone") -> None:
    """Each camera's record now, and one camera's record of an hour ago (outside the window). The
    records of now are stamped by a clock ten minutes ahead: on a loaded machine a test's reads
    may come more than the window's 20 s later, and none may turn stale between two of them."""
    ensure_compacted_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap})
    ahead, old = time.time() + 600, time.time() - 3600
    producer.produce(topic, key=gone.encode(), value=record(gone, old), timestamp=int(old * 1000))
    for index, camera in enumerate(cameras):
        value = record(camera, ahead, "ended" if index == 1 else "streaming")
        producer.produce(topic, key=camera.encode(), value=value, timestamp=int(ahead * 1000))
    assert producer.flush(30) == 0


@dataclass
class RunningUp:
    data_dir: Path
    env: dict[str, str]

    def point(self, bootstrap: str, console_url: str) -> None:
        """up.json as `up` writes it while running (this process its pid)."""
        fields = {"data_dir": str(self.data_dir), "bootstrap_servers": bootstrap, "console_url": console_url}
        up_status.write(self.data_dir / running_up.STATUS_FILE, "running", fields)

    def status(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stream_worker", "cameras", "status", *args],
            cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


@pytest.fixture
def up(tmp_path: Path) -> RunningUp:
    data_dir = tmp_path / "up"
    data_dir.mkdir()
    running_up.write_console_token(data_dir)
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAM_WORKER_")}
    env.update({running_up.ENV: str(data_dir), "XDG_STATE_HOME": str(tmp_path / "state")})
    return RunningUp(data_dir, env)


@pytest.fixture
def console(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str, up: RunningUp
) -> Iterator[tuple[str, str]]:
    """The console, given up's token file, on its own status topic with fresh records; its address
    (http://host:port/) and that topic."""
    topic = topics_of(unique_name)["camera_status_topic"]
    write_statuses(kafka_bootstrap, topic, ["cam-a", "cam-b"])
    console = make_console(
        tmp_path,
        users_file,
        kafka_bootstrap,
        viewer_token_file=up.data_dir / running_up.CONSOLE_TOKEN_FILE,
        **topics_of(unique_name),
    )
    thread = start_console(console.settings, console.database)
    assert thread is not None
    yield thread.address.rstrip("/") + "/", topic
    thread.stop()
    console.database.dispose()


def lines(out: str) -> list[dict]:
    return [orjson.loads(line) for line in out.splitlines()]


def test_under_up_the_console_answers_what_the_topic_holds_without_the_broker(
    up: RunningUp, console: tuple[str, str], kafka_bootstrap: str
) -> None:
    address, topic = console
    admin = httpx.Client(base_url=address, headers={"authorization": f"Bearer {TOKENS['ada']}"}, timeout=30)
    # Written once the console has read its topic (a read waits for that; it loads on a thread of its
    # own, which on a loaded machine may start after a write made as soon as the console answers):
    # its view follows the hour-old record, which a read of the topic's last seconds does not.
    assert {state["camera_id"] for state in admin.get("/api/camera-status").json()} == {"cam-a", "cam-b"}
    write_statuses(kafka_bootstrap, topic, ["cam-a", "cam-b"], gone="gone-late")
    deadline = time.monotonic() + 60
    while "gone-late" not in {state["camera_id"] for state in admin.get("/api/camera-status").json()}:
        assert time.monotonic() < deadline, "the console did not follow the late record"
        time.sleep(0.2)
    from_topic = up.status("--json", "--bootstrap-servers", kafka_bootstrap, "--topic", topic)
    assert from_topic.returncode == 0, from_topic.stderr
    assert [line["camera_id"] for line in lines(from_topic.stdout)] == ["cam-a", "cam-b"]
    # up's broker is closed: only the console can answer; and it names another topic than its own.
    up.point(CLOSED_BROKER, address)
    started = time.perf_counter()
    answered = up.status("--json")
    assert answered.returncode == 0, answered.stderr
    assert answered.stderr == ""  # no note: the console answered
    assert answered.stdout == from_topic.stdout  # byte for byte, the stale flags and the shed fields too
    table = up.status()
    assert table.returncode == 0 and table.stderr == ""
    assert table.stdout.splitlines()[0].split() == [
        "CAMERA", "STATE", "FOR", "IN/S", "OUT/S", "PUBLISHED", "SHED", "DELAY", "DROPPED",
        "RECONNECTS", "LAST_FRAME", "REPLICA", "LAST_ERROR",
    ]  # fmt: skip
    assert [row.split()[:2] for row in table.stdout.splitlines()[1:]] == [
        ["cam-a", "streaming"],
        ["cam-b", "ended"],
    ]
    assert "2.5 of 5" in table.stdout
    print(f"cameras status from the console: {time.perf_counter() - started:.2f} s wall")
    # Light: neither the Kafka client nor the contracts' models are imported on the way.
    loaded = subprocess.run(
        [sys.executable, "-c", HEAVY_MODULES_AT_EXIT, "cameras", "status"],
        cwd=REPO_ROOT, env=up.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert loaded.returncode == 0 and loaded.stderr == "heavy modules: []\n", loaded.stderr
    # A wider window than the console holds, or a broker given, reads the topic (closed: exit 1).
    for args in (("--since", "0"), ("--since", "60"), ("--topic", topic), ("-X", "client.id=x")):
        refused = up.status("--json", "--timeout", "2", *args)
        assert refused.returncode == 1 and refused.stdout == "", (args, refused.stdout, refused.stderr)


def test_when_the_console_is_away_or_refuses_the_topic_is_read_and_a_note_says_why(
    up: RunningUp, console: tuple[str, str], kafka_bootstrap: str, unique_name: str
) -> None:
    address, _ = console
    token = running_up.read_token(up.data_dir / running_up.CONSOLE_TOKEN_FILE)
    assert token is not None
    cameras = [f"{unique_name}-x", f"{unique_name}-y"]
    write_statuses(kafka_bootstrap, CAMERA_STATUS.name, cameras)  # what the topic read finds
    nobody = f"http://127.0.0.1:{free_port()}/"
    for why in (
        "the console did not answer (ConnectionRefusedError)",
        "the console answered 401 Unauthorized",
        f"no console token in {up.data_dir}",
    ):
        if "did not answer" in why:
            up.point(kafka_bootstrap, nobody)
        elif "401" in why:  # the console is there; the token a new one it was not given
            up.point(kafka_bootstrap, address)
            running_up.write_console_token(up.data_dir)
        else:
            running_up.remove_console_token(up.data_dir)
        answered = up.status("--json")
        assert answered.returncode == 0, answered.stderr
        assert answered.stderr == f"note: {why}; reading the topic instead\n"
        assert {line["camera_id"] for line in lines(answered.stdout)} >= set(cameras)
        assert token not in answered.stderr + answered.stdout
