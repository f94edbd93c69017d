"""Real stream servers for the tests of anything that reads cameras (a pytest plugin: conftest.py
lists it in `pytest_plugins`).

- `video_clips`: the clips of `../shared/videos` (beside `$LPR_WEIGHTS_DIR`), the plate in each name.
- `rtsp_server`: GStreamer's RTSP server over every clip (mount = the clip's stem), one per test module.
- `rtsp_servers`: a factory for servers of one test (other mounts, auth, a 1080p25 mount, kill and
  restart), each closed at the test's end.
- `mjpeg_server`: the HTTP MJPEG server over every clip (`mjpeg_server.url(clip.stem)`, and
  `mjpeg_server.base_url() + "/not-video"`: an HTML page), one per test module.
- `mjpeg_servers`: a factory like `rtsp_servers`.
- `black_hole`: (host, port) of a TCP listener that accepts connections and never answers.

Where GStreamer's RTSP server is not installed the RTSP fixtures skip, saying what to install;
under CI (`CI=true`) they fail instead, so that a setup that forgot to install it is caught.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from support import require

from stream_worker.launchers.mjpeg import LocalMjpegServer, MjpegMount
from stream_worker.launchers.rtsp import LocalRtspServer, Mount, rtsp_server_unavailable

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".avi"}


def videos_dir() -> Path:
    weights = Path(
        os.environ.get("LPR_WEIGHTS_DIR", Path(__file__).resolve().parents[2] / "shared" / "weights")
    )
    return weights.resolve().parent / "videos"


def clip_plate(clip: Path) -> str:
    """The plate a clip shows, from its name: `gate-van-H133OE123.mov` -> `H133OE123`."""
    return clip.stem.rsplit("-", 1)[-1]


@pytest.fixture(scope="session")
def video_clips() -> list[Path]:
    clips = sorted(path for path in videos_dir().glob("*") if path.suffix.lower() in VIDEO_SUFFIXES)
    require(clips, f"no video clips in {videos_dir()}")
    return clips


@pytest.fixture(scope="session")
def rtsp_available() -> None:
    reason = rtsp_server_unavailable()
    require(reason is None, f"GStreamer's RTSP server is not installed (scripts/test-servers.sh): {reason}")


def clip_mounts(clips: Sequence[Path], **options: Any) -> list[Mount]:
    """One looped mount per clip, named by the clip's stem; `options` (width, height, fps) on each."""
    return [Mount(clip.stem, clip, **options) for clip in clips]


@pytest.fixture(scope="module")
def rtsp_server(rtsp_available: None, video_clips: list[Path]) -> Iterator[LocalRtspServer]:
    """Every clip looped at its own frame rate: `rtsp_server.url(clip.stem)`. Shared by a module's
    tests: kill or restart only servers of your own (`rtsp_servers`)."""
    with LocalRtspServer(clip_mounts(video_clips)) as server:
        yield server


@pytest.fixture
def rtsp_servers(rtsp_available: None, video_clips: list[Path]) -> Iterator[Callable[..., LocalRtspServer]]:
    """make(mounts=None, **kwargs) -> a started LocalRtspServer (mounts default: every clip);
    kwargs as LocalRtspServer's (port, user, password). Closed at the test's end."""
    servers: list[LocalRtspServer] = []

    def make(mounts: Sequence[Mount] | None = None, **kwargs: Any) -> LocalRtspServer:
        server = LocalRtspServer(mounts if mounts is not None else clip_mounts(video_clips), **kwargs)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.close()


def clip_mjpeg_mounts(clips: Sequence[Path]) -> list[MjpegMount]:
    """One looped MJPEG mount per clip, named by the clip's stem."""
    return [MjpegMount(clip.stem, clip) for clip in clips]


@pytest.fixture(scope="module")
def mjpeg_server(video_clips: list[Path]) -> Iterator[LocalMjpegServer]:
    """Every clip looped at its frame rate: `mjpeg_server.url(clip.stem)`. Shared by a module's
    tests: kill or restart only servers of your own (`mjpeg_servers`)."""
    with LocalMjpegServer(clip_mjpeg_mounts(video_clips)) as server:
        yield server


@pytest.fixture
def mjpeg_servers(video_clips: list[Path]) -> Iterator[Callable[..., LocalMjpegServer]]:
    """make(mounts=None, **kwargs) -> a started LocalMjpegServer (mounts default: every clip);
    kwargs as LocalMjpegServer's (port, user, password). Closed at the test's end."""
    servers: list[LocalMjpegServer] = []

    def make(mounts: Sequence[MjpegMount] | None = None, **kwargs: Any) -> LocalMjpegServer:
        server = LocalMjpegServer(mounts if mounts is not None else clip_mjpeg_mounts(video_clips), **kwargs)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.close()


class BlackHole:
    """A TCP listener that accepts connections and never sends a byte: a camera that hangs."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.2)  # accept() wakes up to see close()
        self.host = host
        self.port = int(self._listener.getsockname()[1])
        self._accepted: list[socket.socket] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="black-hole", daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        """How many clients connected so far."""
        return len(self._accepted)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._accepted.append(connection)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for connection in self._accepted:
            connection.close()
        self._thread.join(timeout=5)


@pytest.fixture
def black_hole() -> Iterator[BlackHole]:
    """`black_hole.host`, `.port`: e.g. rtsp://{host}:{port}/cam or http://{host}:{port}/video.mjpg."""
    hole = BlackHole()
    yield hole
    hole.close()
