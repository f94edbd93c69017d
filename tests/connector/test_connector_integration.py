"""Acceptance tests of the camera connector against the real local broker, with file sources (the
clips of ../shared/videos) and a real HTTP server for the failures; the connector runs as its own
process, as in production.

The RTSP cases (a server killed mid-stream, a wrong RTSP password) are in test_connector_rtsp.py.
"""

from __future__ import annotations

import http.server
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import pairwise
from statistics import median
from urllib.parse import quote

import av
import pytest
from confluent_kafka import Producer
from connector_process import (
    CAMERA_PARTITIONS,
    DASHCAM,
    GATE,
    captured,
    of_camera,
    read_statuses,
    set_source,
    still_then_moving,
    wait_for_frames,
    wait_until,
)
from support import reply, serve_http

from stream_worker.cameras.store import remove_settings, write_settings
from stream_worker.connector.partitioner import partition_for
from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
from stream_worker.launchers.ports import free_port

pytestmark = pytest.mark.integration

PASSWORD = "Sup3r-S3cret pw/x"  # a space and a slash: percent-encoded in the URL, redacted both ways


def test_a_file_camera_publishes_frames_sampled_to_its_fps_with_the_input_headers(
    kafka_bootstrap, topics, start_connector, frames
):
    set_source(kafka_bootstrap, topics, "dash", str(DASHCAM), fps=5, loop=True)
    connector = start_connector()
    records = wait_for_frames(frames, "dash", 25, [connector])

    sessions, numbers = set(), []
    for record in records:
        assert record.headers["camera_id"] == b"dash"
        match = re.fullmatch(r"dash:([0-9a-f]+):(\d+)", record.headers["frame_id"].decode())
        assert match, record.headers["frame_id"]
        sessions.add(match[1])
        numbers.append(int(match[2]))
        assert record.headers["captured_at"].decode().endswith("Z")
    assert len(sessions) == 1  # the loop goes on in its session (the clip is 1.6 s: it looped)
    records.sort(key=lambda r: int(r.headers["frame_id"].split(b":")[2]))
    assert sorted(numbers) == list(range(min(numbers), min(numbers) + len(numbers)))
    times = [captured(r) for r in records]
    assert times == sorted(times)
    gaps = [b - a for a, b in pairwise(times)]
    assert median(gaps) == pytest.approx(0.2, abs=0.03)  # 30 fps sampled to 5, paced at the file's rate
    assert 4.0 <= (len(times) - 1) / (times[-1] - times[0]) <= 6.0
    assert abs(times[-1] - time.time()) < 10  # stream time mapped to wall time, not to the file's 0
    image = next(av.open(__import__("io").BytesIO(records[-1].value), format="mjpeg").decode(video=0))
    assert (image.width, image.height) == (800, 416)

    status = read_statuses(kafka_bootstrap, topics.status)["dash"]
    assert (status.state, status.replica, status.source) == ("streaming", "replica-0", str(DASHCAM))
    assert connector.metric('stream_worker_connector_camera_connected{camera="dash"}') == 1
    published = connector.metric('stream_worker_connector_camera_frames_published_total{camera="dash"}')
    assert published >= 25
    assert connector.scrape("/readyz")[0] == 200

    assert connector.stop() == 0
    stopped = [line for line in connector.log_lines() if line.get("msg") == "stopped"]
    assert stopped and stopped[0]["undelivered_frames"] == 0 and stopped[0]["frames_left_queued"] == 0
    frames.poll(2.0)
    assert len(of_camera(frames, "dash")) >= published  # what it counted as published is there
    assert read_statuses(kafka_bootstrap, topics.status)["dash"].state == "stopped"


def test_cameras_added_changed_and_removed_apply_within_seconds(
    kafka_bootstrap, topics, start_connector, frames
):
    connector = start_connector()
    set_source(kafka_bootstrap, topics, "gate", str(GATE), fps=2, loop=True)
    added = time.time()
    first = wait_for_frames(frames, "gate", 1, [connector])[0]
    assert captured(first) - added < 10

    set_source(kafka_bootstrap, topics, "gate", str(GATE), fps=4, loop=True)  # restarts its reader
    changed = time.time()
    old_session = first.headers["frame_id"].split(b":")[1]

    def new_session() -> list:
        frames.poll(0.3)
        return [r for r in of_camera(frames, "gate") if r.headers["frame_id"].split(b":")[1] != old_session]

    wait_until(lambda: len(new_session()) >= 9, "frames of the new session", [connector])
    renewed = sorted(new_session(), key=lambda r: int(r.headers["frame_id"].split(b":")[2]))
    assert captured(renewed[0]) - changed < 10
    times = [captured(r) for r in renewed]
    assert median([b - a for a, b in pairwise(times)]) == pytest.approx(0.25, abs=0.04)

    remove_settings(kafka_bootstrap, "gate", topics.cameras)
    removed = time.time()
    wait_until(
        lambda: "gate" not in read_statuses(kafka_bootstrap, topics.status),
        "the status tombstone",
        [connector],
    )
    assert time.time() - removed < 15
    frames.poll(3.0)
    assert max(captured(r) for r in of_camera(frames, "gate")) < removed + 3
    assert "gate" not in connector.cameras()


class _Camera(http.server.BaseHTTPRequestHandler):
    """A camera's web server: /auth wants a password none of the tests has, /text is no video."""

    def do_GET(self) -> None:
        if self.path == "/auth":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="camera"')
            self.end_headers()
            return
        reply(self, 200, "text/plain", b"this is a web page, not a video stream\n" * 200)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def camera_server() -> Iterator[str]:
    with serve_http(_Camera) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def silent_port() -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener.getsockname()[1]
    listener.close()


def test_each_failing_camera_shows_its_own_state_and_the_others_keep_their_rate(
    kafka_bootstrap, topics, start_connector, frames, camera_server, silent_port, monkeypatch
):
    monkeypatch.setenv("CAM_USER", "admin")
    monkeypatch.setenv("CAM_PASSWORD", PASSWORD)
    monkeypatch.delenv("NEVER_SET_PASSWORD", raising=False)
    expected = {
        "good": "streaming",
        "wrong-password": "unauthorized",
        "web-page": "not_video",
        "refused": "unreachable",
        "silent": "unreachable",
        "no-secret": "missing_credentials",
        "no-file": "unreachable",
    }
    set_source(kafka_bootstrap, topics, "good", str(DASHCAM), fps=5, loop=True)
    set_source(
        kafka_bootstrap,
        topics,
        "wrong-password",
        f"http://${{CAM_USER}}:${{CAM_PASSWORD}}@{camera_server}/auth",
    )
    set_source(kafka_bootstrap, topics, "web-page", f"http://{camera_server}/text?token=${{CAM_PASSWORD}}")
    set_source(
        kafka_bootstrap,
        topics,
        "refused",
        f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@127.0.0.1:{free_port()}/s",
    )
    set_source(
        kafka_bootstrap, topics, "silent", f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@127.0.0.1:{silent_port}/s"
    )
    set_source(kafka_bootstrap, topics, "no-secret", "rtsp://admin:${NEVER_SET_PASSWORD}@127.0.0.1/s")
    set_source(kafka_bootstrap, topics, "no-file", "/no/such/camera.mp4")
    connector = start_connector("--open-timeout-s", "2")

    def states() -> dict[str, str]:
        return {c: s.state for c, s in read_statuses(kafka_bootstrap, topics.status).items()}

    wait_until(lambda: states() == expected, f"the states {expected}", [connector])
    # The good camera's rate is untouched by the six failing ones.
    frames.poll(1.0)
    before = len(of_camera(frames, "good"))
    time.sleep(4.0)
    frames.poll(1.0)
    rate = (len(of_camera(frames, "good")) - before) / 5.0
    assert 3.5 <= rate <= 6.5, rate
    statuses = read_statuses(kafka_bootstrap, topics.status)
    assert "401" in statuses["wrong-password"].last_error
    assert "NEVER_SET_PASSWORD" in statuses["no-secret"].last_error
    assert statuses["refused"].reconnects >= 1  # tried again, with backoff
    assert all(statuses[c].frames_published == 0 for c in expected if c != "good")

    # No password anywhere: log lines, metrics, status records, the status command's output.
    table = subprocess.run(
        [sys.executable, "-m", "stream_worker", "cameras", "status", "--bootstrap-servers", kafka_bootstrap,
         "--topic", topics.status],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    for camera, state in expected.items():
        assert re.search(rf"^{camera}\s+{state}\s", table, re.MULTILINE), table
    seen = {
        "log": connector.log_path.read_text(),
        "metrics": connector.scrape()[1],
        "status records": "".join(s.to_json().decode() for s in statuses.values()),
        "status command": table,
    }
    assert "***" in seen["log"]  # the errors were there, redacted
    for where, text in seen.items():
        for secret in (PASSWORD, quote(PASSWORD, safe=""), "S3cret"):
            assert secret not in text, f"the password is in the {where}"
    assert connector.stop() == 0


def test_two_replicas_share_the_cameras_and_one_takes_over_when_the_other_dies(
    kafka_bootstrap, topics, start_connector, frames
):
    cameras = []
    for index in range(200):  # one camera per partition of the cameras topic
        camera_id = f"cam-{index}"
        if partition_for(camera_id.encode(), CAMERA_PARTITIONS) not in {
            partition_for(c.encode(), CAMERA_PARTITIONS) for c in cameras
        }:
            cameras.append(camera_id)
        if len(cameras) == CAMERA_PARTITIONS:
            break
    for camera_id in cameras:
        set_source(kafka_bootstrap, topics, camera_id, str(GATE), fps=2, loop=True)
    first = start_connector()
    second = start_connector()

    def shared() -> bool:
        a, b = first.cameras(), second.cameras()
        return bool(a) and bool(b) and not a & b and a | b == set(cameras)

    wait_until(shared, "the cameras shared by the two replicas", [first, second])
    wait_until(
        lambda: {s.state for s in read_statuses(kafka_bootstrap, topics.status).values()} == {"streaming"},
        "every camera streaming",
        [first, second],
    )
    statuses = read_statuses(kafka_bootstrap, topics.status)
    assert {statuses[c].replica for c in first.cameras()} == {"replica-0"}
    assert {statuses[c].replica for c in second.cameras()} == {"replica-1"}

    first.stop(signal.SIGKILL)
    killed = time.monotonic()
    wait_until(lambda: second.cameras() == set(cameras), "the survivor reading every camera", [second])
    assert time.monotonic() - killed < 45  # the 6 s session timeout, then a rebalance
    wait_until(
        lambda: all(
            s.replica == "replica-1" and s.state == "streaming"
            for s in read_statuses(kafka_bootstrap, topics.status).values()
        ),
        "every camera streaming from the survivor",
        [second],
    )
    assert second.stop() == 0


def test_a_gated_camera_publishes_static_markers_the_worker_takes(
    kafka_bootstrap, topics, start_connector, frames, tmp_path
):
    from stream_worker.worker.validate import Frame, InputRecord, validate

    video = tmp_path / "scene.mp4"
    still_then_moving(video, seconds_still=3, seconds_moving=1)
    motion = MotionSettings(pre_roll_s=0.5, post_roll_s=0.5, heartbeat_s=10.0)
    settings = CameraSettings(source=CameraSource(url=str(video), fps=5), motion=motion)
    write_settings(kafka_bootstrap, "gated", settings, topics.cameras)
    connector = start_connector()
    wait_until(
        lambda: (
            read_statuses(kafka_bootstrap, topics.status).get("gated", None) is not None
            and read_statuses(kafka_bootstrap, topics.status)["gated"].state == "ended"
        ),
        "the gated camera's end",
        [connector],
    )
    status = read_statuses(kafka_bootstrap, topics.status)["gated"]
    count = (status.static_markers or 0) + status.frames_published
    records = wait_for_frames(frames, "gated", count, [connector])
    records.sort(key=lambda r: int(r.headers["frame_id"].split(b":")[2]))
    assert [int(r.headers["frame_id"].split(b":")[2]) for r in records] == list(range(count))
    markers = [r for r in records if "static" in r.headers]
    images = [r for r in records if "static" not in r.headers]
    assert markers and images and len(markers) + len(images) == count
    # 7 s at 5 fps, 35 frames: the static ones (3 s before the motion less its pre-roll, 3 s after
    # it less its post-roll) stand for themselves as a marker a second (the default), not one each
    assert status.frames_static > 20 and len(markers) <= 9 and count < 35
    for marker in markers:
        assert not marker.value and marker.headers["static"] == b"320x240"
        taken = validate(
            InputRecord(topics.frames, marker.partition, marker.offset, marker.key, marker.value,
                        list(marker.headers.items()), received_at=0.0),
            max_frame_bytes=1 << 20,
        )  # fmt: skip
        assert isinstance(taken, Frame) and taken.static == (320, 240)
    assert all(image.value[:2] == b"\xff\xd8" for image in images)
    assert status.static_markers == len(markers) and status.frames_published == len(images)
    assert connector.metric('stream_worker_connector_camera_static_markers_total{camera="gated"}') == len(
        markers
    )


def test_a_camera_whose_id_is_not_the_contract_is_reported_and_the_others_stream(
    kafka_bootstrap, topics, start_connector, frames
):
    # A settings record written by another producer than `cameras set` (which refuses
    # these ids) is skipped, logged and counted; no frame is published under that id.
    source = CameraSettings(source=CameraSource(url=str(DASHCAM), fps=5, loop=True)).to_json()
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topics.cameras, key=b"x?y#z", value=source, partition=0)
    assert producer.flush(30) == 0
    set_source(kafka_bootstrap, topics, "dash", str(DASHCAM), fps=5, loop=True)
    connector = start_connector()
    wait_for_frames(frames, "dash", 5, [connector])
    producer.produce(topics.cameras, key=b"../cameras/dash/remove?", value=source, partition=0)
    assert producer.flush(30) == 0  # read while following, not only at the load
    wait_until(
        lambda: connector.metric("stream_worker_connector_skipped_settings_total") == 2,
        "both records skipped",
        [connector],
    )
    reported = [
        line["record"]
        for line in connector.log_lines()
        if line.get("msg") == "skipped a camera settings record"
    ]
    assert len(reported) == 2
    assert "camera id 'x?y#z' is not 1 to 64 of A-Z a-z 0-9 . _ -" in reported[0]
    assert "camera id '../cameras/dash/remove?' is not" in reported[1]
    before = len(of_camera(frames, "dash"))
    wait_for_frames(frames, "dash", before + 5, [connector])  # the good camera streams on
    assert not [r for r in frames.records if r.key != b"dash"]
    assert connector.stop() == 0
