"""The local HTTP MJPEG camera, read the way the connector reads cameras: PyAV (FFmpeg) over HTTP."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import av
import av.error
import numpy as np
import pytest
import simplejpeg
from stream_servers import BlackHole, clip_mjpeg_mounts

from stream_worker.launchers.mjpeg import LocalMjpegServer, MjpegMount, MjpegServerError

pytestmark = pytest.mark.integration

TIMEOUT = (10.0, 5.0)  # open, read


def clip_frames(clip: Path) -> list[np.ndarray]:
    with av.open(str(clip)) as container:
        return [frame.to_ndarray(format="gray").astype(np.int16) for frame in container.decode(video=0)]


def read_frames(url: str, count: int) -> list[av.VideoFrame]:
    # No format given: FFmpeg picks its mpjpeg demuxer from the multipart Content-Type.
    with av.open(url, timeout=TIMEOUT) as container:
        assert container.format.name == "mpjpeg"
        frames = []
        for frame in container.decode(video=0):
            frames.append(frame)
            if len(frames) == count:
                break
        return frames


def test_every_clip_is_served_as_itself_at_its_frame_rate(
    mjpeg_server: LocalMjpegServer, video_clips: list[Path]
) -> None:
    for clip in video_clips:
        originals = clip_frames(clip)
        with av.open(str(clip)) as container:
            rate = float(container.streams.video[0].guessed_rate)
        count = min(8, len(originals))
        started = time.monotonic()
        frames = read_frames(mjpeg_server.url(clip.stem), count)
        elapsed = time.monotonic() - started
        assert len(frames) == count
        # Paced like a camera: (count - 1) frame intervals at least, give or take scheduling.
        assert elapsed >= (count - 1) / rate * 0.8
        for frame in frames:
            served = frame.to_ndarray(format="gray").astype(np.int16)
            assert served.shape == originals[0].shape
            distances = sorted(float(np.abs(served - original).mean()) for original in originals)
            assert distances[0] < 4.0, f"{clip.name}: a served frame matches none of the clip's"


def test_a_clip_loops(mjpeg_server: LocalMjpegServer, video_clips: list[Path]) -> None:
    clip = min(video_clips, key=lambda path: len(clip_frames(path)))
    frames = read_frames(mjpeg_server.url(clip.stem), len(clip_frames(clip)) + 10)
    assert len(frames) == len(clip_frames(clip)) + 10


def test_a_snapshot(mjpeg_server: LocalMjpegServer, video_clips: list[Path]) -> None:
    with urllib.request.urlopen(f"{mjpeg_server.base_url()}/{video_clips[0].stem}.jpg", timeout=10) as answer:
        assert answer.headers["Content-Type"] == "image/jpeg"
        image = simplejpeg.decode_jpeg(answer.read())
    assert image.shape[:2] == clip_frames(video_clips[0])[0].shape


def test_a_page_that_is_not_video_is_refused(mjpeg_server: LocalMjpegServer) -> None:
    with urllib.request.urlopen(f"{mjpeg_server.base_url()}/not-video", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/html")
    with pytest.raises(av.error.InvalidDataError):
        av.open(f"{mjpeg_server.base_url()}/not-video", timeout=TIMEOUT)


def test_an_unknown_path_is_not_found(mjpeg_server: LocalMjpegServer) -> None:
    with pytest.raises(av.error.HTTPNotFoundError):
        av.open(f"{mjpeg_server.base_url()}/no-such-camera.mjpg", timeout=TIMEOUT)


def test_basic_auth_lets_in_only_the_right_password(
    mjpeg_servers: Callable[..., LocalMjpegServer], video_clips: list[Path]
) -> None:
    server = mjpeg_servers(clip_mjpeg_mounts(video_clips[:1]), user="gate", password="p@ss:w/rd")
    mount = video_clips[0].stem
    assert len(read_frames(server.authorized_url(mount), 2)) == 2
    for url in (server.url(mount, "gate", "wrong"), server.url(mount)):
        with pytest.raises(av.error.HTTPUnauthorizedError):
            av.open(url, timeout=TIMEOUT)


def test_killed_then_restarted_on_the_same_port_serves_again(
    mjpeg_servers: Callable[..., LocalMjpegServer], video_clips: list[Path]
) -> None:
    server = mjpeg_servers(clip_mjpeg_mounts(video_clips[:1]))
    url = server.url(video_clips[0].stem)
    with av.open(url, timeout=TIMEOUT) as container:
        frames = container.decode(video=0)
        next(frames)
        server.kill()
        # The stream stops: mostly av.error.OSError "Input/output error", InvalidDataError when the
        # kill cut a JPEG in two.
        with pytest.raises((av.error.OSError, av.error.InvalidDataError, StopIteration)):
            for _ in range(1000):
                next(frames)
    with pytest.raises(av.error.ConnectionRefusedError):
        av.open(url, timeout=TIMEOUT)
    port = server.port
    server.start()
    assert server.port == port
    assert len(read_frames(url, 2)) == 2


def test_a_file_that_is_not_video_fails_the_start_clearly(tmp_path: Path) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n" * 100)
    server = LocalMjpegServer([MjpegMount("cam", text)])
    with pytest.raises(MjpegServerError, match=r"notes\.mp4 cannot be read as a video"):
        server.start()
    server.close()


def test_a_port_in_use_fails_the_start_clearly(video_clips: list[Path]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        server = LocalMjpegServer(clip_mjpeg_mounts(video_clips[:1]), port=taken.getsockname()[1])
        with pytest.raises(MjpegServerError, match="cannot listen"):
            server.start()
        server.close()


def test_a_black_hole_never_answers(black_hole: BlackHole) -> None:
    started = time.monotonic()
    with pytest.raises(av.error.ExitError):
        av.open(f"http://{black_hole.host}:{black_hole.port}/video.mjpg", timeout=(1.0, 1.0))
    assert time.monotonic() - started < 5
    assert black_hole.connections == 1
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(f"http://{black_hole.host}:{black_hole.port}/", timeout=0.5)
