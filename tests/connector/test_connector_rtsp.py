"""The connector against a real RTSP server (GStreamer's, tests/stream_servers.py) and the real
broker: every clip read over RTSP; the server killed mid-stream and started again; a wrong RTSP
password and a server that never answers, each camera in its own state, the others unaffected, and
no password anywhere."""

from __future__ import annotations

import io
import time
from urllib.parse import quote

import av
import pytest
from connector_process import (
    DASHCAM,
    captured,
    of_camera,
    read_statuses,
    session_of,
    set_source,
    wait_for_frames,
    wait_until,
)

from stream_worker.launchers.rtsp import Mount

pytestmark = pytest.mark.integration

USER = "operator"
PASSWORD = "Rtsp-S3cret word"  # a space: percent-encoded in the URL, redacted both ways
WRONG_PASSWORD = "Wr0ng-Guess"


def size_of(path) -> tuple[int, int]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return stream.codec_context.width, stream.codec_context.height


def jpeg_size(value: bytes) -> tuple[int, int]:
    image = next(av.open(io.BytesIO(value), format="mjpeg").decode(video=0))
    return image.width, image.height


def rate_between(reader, camera_id: str, start: float, end: float) -> float:
    """Frames per second of the camera captured in [start, end)."""
    times = [t for t in (captured(r) for r in of_camera(reader, camera_id)) if start <= t < end]
    return len(times) / (end - start)


def test_every_clip_is_read_over_rtsp(
    kafka_bootstrap, topics, start_connector, frames, rtsp_server, video_clips
):
    cameras = {f"rtsp-{index}": clip for index, clip in enumerate(video_clips)}
    for camera_id, clip in cameras.items():
        set_source(kafka_bootstrap, topics, camera_id, rtsp_server.url(clip.stem), fps=5)
    connector = start_connector()
    for camera_id, clip in cameras.items():
        records = wait_for_frames(frames, camera_id, 8, [connector])
        # x264 re-encodes at the clip's size (macroblock-aligned heights may be padded, never cut)
        width, height = jpeg_size(records[-1].value)
        assert width == size_of(clip)[0] and abs(height - size_of(clip)[1]) < 16, (camera_id, clip)
        assert abs(captured(records[-1]) - time.time()) < 10
    statuses = read_statuses(kafka_bootstrap, topics.status)
    assert {statuses[c].state for c in cameras} == {"streaming"}
    assert connector.stop() == 0


def test_a_killed_rtsp_server_is_read_again_within_10_s_of_its_return_and_the_others_keep_their_rate(
    kafka_bootstrap, topics, start_connector, frames, rtsp_servers, monkeypatch
):
    monkeypatch.setenv("CAM_USER", USER)
    monkeypatch.setenv("CAM_PASSWORD", PASSWORD)
    server = rtsp_servers([Mount("dash", DASHCAM)], user=USER, password=PASSWORD)
    steady = rtsp_servers([Mount("dash", DASHCAM)])  # another camera on a server that stays up
    set_source(
        kafka_bootstrap,
        topics,
        "live",
        f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@{server.host}:{server.port}/dash",
        fps=5,
    )
    set_source(kafka_bootstrap, topics, "steady", steady.url("dash"), fps=5)
    set_source(kafka_bootstrap, topics, "file", str(DASHCAM), fps=5, loop=True)
    connector = start_connector()
    for camera_id in ("live", "steady", "file"):
        wait_for_frames(frames, camera_id, 10, [connector])
    first_session = session_of(of_camera(frames, "live")[-1])

    server.kill()
    killed = time.time()
    wait_until(
        lambda: read_statuses(kafka_bootstrap, topics.status)["live"].state in {"unreachable", "stalled"},
        "the live camera's failure reported",
        [connector],
    )
    time.sleep(6.0)  # down a while: several tries, with backoff
    server.start()
    returned = time.time()

    def reading_again() -> bool:
        frames.poll(0.3)
        return any(session_of(r) != first_session for r in of_camera(frames, "live"))

    wait_until(
        reading_again, "frames of the live camera after the server's return", [connector], timeout_s=30
    )
    again = min(captured(r) for r in of_camera(frames, "live") if session_of(r) != first_session)
    print(f"read again {again - returned:.2f} s after the server's return")
    assert again - returned < 10.0, connector.log_tail()  # the tries' failures, each state once
    statuses = read_statuses(kafka_bootstrap, topics.status)
    assert statuses["live"].reconnects >= 2
    assert connector.metric('stream_worker_connector_camera_reconnects_total{camera="live"}') >= 2
    # The other cameras kept their rate through the outage.
    frames.poll(1.0)
    for camera_id in ("steady", "file"):
        rate = rate_between(frames, camera_id, killed, returned)
        assert 3.5 <= rate <= 6.5, (camera_id, rate)
        assert statuses[camera_id].reconnects == 0
    assert connector.is_running() and connector.stop() == 0
    log = connector.log_path.read_text()
    for secret in (PASSWORD, quote(PASSWORD, safe="")):
        assert secret not in log


def test_a_wrong_rtsp_password_and_a_server_that_never_answers_are_told_apart(
    kafka_bootstrap, topics, start_connector, frames, rtsp_servers, black_hole, monkeypatch
):
    monkeypatch.setenv("CAM_USER", USER)
    monkeypatch.setenv("CAM_PASSWORD", PASSWORD)
    monkeypatch.setenv("OLD_PASSWORD", WRONG_PASSWORD)
    server = rtsp_servers([Mount("dash", DASHCAM)], user=USER, password=PASSWORD)
    where = f"{server.host}:{server.port}"
    set_source(
        kafka_bootstrap, topics, "right", f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@{where}/dash", fps=5
    )
    set_source(
        kafka_bootstrap, topics, "wrong", f"rtsp://${{CAM_USER}}:${{OLD_PASSWORD}}@{where}/dash", fps=5
    )
    set_source(kafka_bootstrap, topics, "anonymous", f"rtsp://{where}/dash", fps=5)
    set_source(
        kafka_bootstrap,
        topics,
        "hangs",
        f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@{black_hole.host}:{black_hole.port}/cam",
        fps=5,
    )
    set_source(
        kafka_bootstrap, topics, "no-mount", f"rtsp://${{CAM_USER}}:${{CAM_PASSWORD}}@{where}/nothing", fps=5
    )
    connector = start_connector("--open-timeout-s", "3")
    expected = {
        "right": "streaming",
        "wrong": "unauthorized",
        "anonymous": "unauthorized",
        "hangs": "unreachable",
        "no-mount": "unreachable",
    }
    wait_until(
        lambda: {c: s.state for c, s in read_statuses(kafka_bootstrap, topics.status).items()} == expected,
        f"the states {expected}",
        [connector],
    )
    assert black_hole.connections >= 1
    statuses = read_statuses(kafka_bootstrap, topics.status)
    assert "401" in statuses["wrong"].last_error and "404" in statuses["no-mount"].last_error
    before = len(wait_for_frames(frames, "right", 5, [connector]))
    time.sleep(3.0)
    frames.poll(1.0)
    assert len(of_camera(frames, "right")) - before >= 8  # about 5 a second, failures beside it
    seen = {
        "log": connector.log_path.read_text(),
        "metrics": connector.scrape()[1],
        "status records": "".join(s.to_json().decode() for s in statuses.values()),
    }
    for where_seen, text in seen.items():
        for secret in (PASSWORD, quote(PASSWORD, safe=""), WRONG_PASSWORD):
            assert secret not in text, f"a password is in the {where_seen}"
    assert connector.stop() == 0
