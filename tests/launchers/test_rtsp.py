"""The local RTSP server, read the way the connector reads cameras: PyAV (FFmpeg) over RTSP/TCP."""

from __future__ import annotations

import contextlib
import itertools
import socket
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import av
import av.error
import numpy as np
import pytest
from stream_servers import BlackHole, clip_mounts

from stream_worker.launchers.rtsp import LocalRtspServer, Mount, RtspServerError, rtsp_server_unavailable

pytestmark = pytest.mark.integration

# analyzeduration: FFmpeg otherwise waits ~5 s of a 4 fps stream to guess its frame rate.
OPEN_OPTIONS = {"rtsp_transport": "tcp", "analyzeduration": "500000"}
TIMEOUT = (10.0, 5.0)  # open, read


def clip_frames(clip: Path) -> list[np.ndarray]:
    with av.open(str(clip)) as container:
        return [frame.to_ndarray(format="gray").astype(np.int16) for frame in container.decode(video=0)]


def read_frames(url: str, count: int) -> tuple[list[av.VideoFrame], av.container.InputContainer]:
    container = av.open(url, options=OPEN_OPTIONS, timeout=TIMEOUT)
    frames = []
    for frame in container.decode(video=0):
        frames.append(frame)
        if len(frames) == count:
            break
    return frames, container


def pts_steps(frames: list[av.VideoFrame]) -> list[int]:
    # FFmpeg gives the first frame of an RTSP stream no pts (no RTCP sender report yet).
    stamps = [frame.pts for frame in frames if frame.pts is not None]
    return [later - earlier for earlier, later in itertools.pairwise(stamps)]


def test_every_clip_is_served_as_itself(rtsp_server: LocalRtspServer, video_clips: list[Path]) -> None:
    for clip in video_clips:
        frames, container = read_frames(rtsp_server.url(clip.stem), 6)
        container.close()
        originals = clip_frames(clip)
        assert len(frames) == 6
        for frame in frames:
            assert (frame.width, frame.height) == (originals[0].shape[1], originals[0].shape[0])
            served = frame.to_ndarray(format="gray").astype(np.int16)
            # Each served frame is one of the clip's, re-encoded: close to one, far from the others.
            distances = sorted(float(np.abs(served - original).mean()) for original in originals)
            assert distances[0] < 4.0, f"{clip.name}: a served frame matches none of the clip's"


def test_a_clip_loops_with_its_frame_rate_and_time_running_on(
    rtsp_server: LocalRtspServer, video_clips: list[Path]
) -> None:
    clip = min(video_clips, key=lambda path: len(clip_frames(path)))  # the shortest: quickest to loop
    count = len(clip_frames(clip))
    frames, container = read_frames(rtsp_server.url(clip.stem), 2 * count + 5)
    rate = container.streams.video[0].average_rate
    time_base = container.streams.video[0].time_base
    container.close()
    with av.open(str(clip)) as original:
        assert rate == original.streams.video[0].guessed_rate
    steps = pts_steps(frames)
    expected = 1 / (rate * time_base)
    assert len(frames) == 2 * count + 5
    assert all(abs(step - expected) <= 1 for step in steps), (
        f"pts steps {sorted(set(steps))}, expected {expected}"
    )


def test_a_mount_scaled_to_1080p_at_25_fps(
    rtsp_servers: Callable[..., LocalRtspServer], video_clips: list[Path]
) -> None:
    server = rtsp_servers(clip_mounts(video_clips[:1], width=1920, height=1080, fps=25))
    frames, container = read_frames(server.url(video_clips[0].stem), 30)
    stream = container.streams.video[0]
    assert stream.average_rate == 25
    assert stream.codec_context.name == "h264"
    steps = pts_steps(frames)
    container.close()
    assert {(frame.width, frame.height) for frame in frames} == {(1920, 1080)}
    assert all(abs(step - Fraction(1, 25) / stream.time_base) <= 1 for step in steps)


def test_basic_auth_lets_in_only_the_right_password(
    rtsp_servers: Callable[..., LocalRtspServer], video_clips: list[Path]
) -> None:
    server = rtsp_servers(clip_mounts(video_clips[:1]), user="gate", password="p@ss:w/rd")
    mount = video_clips[0].stem
    frames, container = read_frames(server.authorized_url(mount), 2)
    container.close()
    assert len(frames) == 2
    for url in (server.url(mount, "gate", "wrong"), server.url(mount)):
        with pytest.raises(av.error.HTTPUnauthorizedError, match="401 Unauthorized"):
            av.open(url, options=OPEN_OPTIONS, timeout=TIMEOUT)


def test_an_unknown_mount_is_not_found(rtsp_server: LocalRtspServer) -> None:
    url = rtsp_server.url(rtsp_server.mounts[0].name).rsplit("/", 1)[0] + "/no-such-camera"
    with pytest.raises(av.error.HTTPNotFoundError):
        av.open(url, options=OPEN_OPTIONS, timeout=TIMEOUT)


def test_killed_then_restarted_on_the_same_port_serves_again(
    rtsp_servers: Callable[..., LocalRtspServer], video_clips: list[Path]
) -> None:
    server = rtsp_servers(clip_mounts(video_clips[:1]))
    url = server.url(video_clips[0].stem)
    frames, container = read_frames(url, 2)
    assert len(frames) == 2
    server.kill()
    # The stream stops: mostly like a normal end of stream, without an error.
    with contextlib.suppress(av.error.FFmpegError):
        assert sum(1 for _ in container.decode(video=0)) < 1000
    container.close()
    with pytest.raises(av.error.ConnectionRefusedError):
        av.open(url, options=OPEN_OPTIONS, timeout=TIMEOUT)
    port = server.port
    server.start()
    assert server.port == port
    started = time.monotonic()
    frames, container = read_frames(url, 2)
    container.close()
    assert len(frames) == 2
    assert time.monotonic() - started < 10


def test_stopped_and_started_again(
    rtsp_servers: Callable[..., LocalRtspServer], video_clips: list[Path]
) -> None:
    server = rtsp_servers(clip_mounts(video_clips[:1]))
    pid = server.pid
    server.stop()
    assert not server.is_running()
    server.start()
    assert server.is_running() and server.pid != pid
    frames, container = read_frames(server.url(video_clips[0].stem), 1)
    container.close()
    assert len(frames) == 1


def test_a_missing_file_fails_the_start_clearly(rtsp_available: None, tmp_path: Path) -> None:
    server = LocalRtspServer([Mount("cam", tmp_path / "absent.mp4")])
    with pytest.raises(RtspServerError, match=r"no such video file: .*absent\.mp4"):
        server.start()
    assert not server.is_running()
    server.close()


def test_a_file_that_is_not_video_fails_the_start_clearly(rtsp_available: None, tmp_path: Path) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n" * 100)
    server = LocalRtspServer([Mount("cam", text)])
    with pytest.raises(RtspServerError, match=r"notes\.mp4"):
        server.start()
    server.close()


def test_a_port_in_use_fails_the_start_clearly(rtsp_available: None, video_clips: list[Path]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        server = LocalRtspServer(clip_mounts(video_clips[:1]), port=taken.getsockname()[1])
        with pytest.raises(RtspServerError, match="cannot listen"):
            server.start()
        server.close()


def test_unavailable_says_why() -> None:
    reason = rtsp_server_unavailable("/nonexistent/python3")
    assert reason is not None and "/nonexistent/python3" in reason


def test_mount_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="both width and height"):
        Mount("cam", Path("x.mp4"), width=1920)
    with pytest.raises(ValueError, match="mount name"):
        Mount("a/b c", Path("x.mp4"))
    with pytest.raises(ValueError, match="unique"):
        LocalRtspServer([Mount("cam", Path("x.mp4")), Mount("cam", Path("y.mp4"))])


def test_a_black_hole_times_out_as_invalid_data(black_hole: BlackHole) -> None:
    # FFmpeg's RTSP demuxer reports a server that never answers as invalid data, not as a timeout.
    started = time.monotonic()
    with pytest.raises(av.error.InvalidDataError):
        av.open(f"rtsp://{black_hole.host}:{black_hole.port}/cam", options=OPEN_OPTIONS, timeout=(1.0, 1.0))
    assert time.monotonic() - started < 5
    assert black_hole.connections == 1
