"""A local RTSP server (GStreamer's, run by the system Python) serving video files as live cameras.

For the tests and the demo: each mount serves a file looped forever as H.264 over RTSP with
timestamps that run on across loops, like a camera. GStreamer's Python bindings are Debian
packages for the system interpreter (`scripts/test-servers.sh` installs them), not for the project's
virtual environment, so the server itself is `rtsp_server.py` beside this file, started with that
interpreter; this class starts it on a port, waits until it answers RTSP, stops it, and starts it
again on the same port (a camera that reboots).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from stream_worker.launchers.mount_server import MountServer
from stream_worker.launchers.process import LoggedProcess

SERVER_SCRIPT = Path(__file__).with_name("rtsp_server.py")
READY_LINE = "rtsp server ready"  # rtsp_server.READY_LINE
DEFAULT_PYTHON = "/usr/bin/python3"


def gstreamer_python() -> str:
    """The interpreter that has GStreamer's bindings: $STREAM_WORKER_GST_PYTHON or Debian's."""
    return os.environ.get("STREAM_WORKER_GST_PYTHON", DEFAULT_PYTHON)


class RtspServerError(RuntimeError):
    """The RTSP server could not be found, started, or did not answer in time."""


@dataclass(frozen=True)
class Mount:
    """One camera of the server: rtsp://host:port/<name> serves `path`.

    `loop`: start the file again at its end (else the stream ends). `width`/`height` (both or
    neither): scale, with borders, to that size. `fps`: the frame rate to serve at (an int or a
    fraction such as "30000/1001"); the file's own rate when None."""

    name: str
    path: Path
    loop: bool = True
    width: int | None = None
    height: int | None = None
    fps: int | str | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name.strip("/") or self.name != quote(self.name, safe="-_.~"):
            raise ValueError(f"mount name {self.name!r}: use letters, digits, '-', '_', '.'")
        if (self.width is None) != (self.height is None):
            raise ValueError(f"mount {self.name!r}: give both width and height, or neither")


def rtsp_server_unavailable(python: str | None = None) -> str | None:
    """Why the RTSP server cannot run on this machine (what to install), or None when it can."""
    interpreter = python or gstreamer_python()
    try:
        result = subprocess.run(
            [interpreter, str(SERVER_SCRIPT), "--check"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"cannot run {interpreter}: {error}"
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return (
            lines[-1]
            if lines
            else f"{interpreter} {SERVER_SCRIPT.name} --check exited with {result.returncode}"
        )
    return None


class LocalRtspServer(MountServer[Mount]):
    """GStreamer's RTSP server on `host`:`port` (a free port when None) serving `mounts`.

    `user`/`password`: HTTP-style basic auth on every mount (a client without them or with wrong
    ones gets 401). The port stays the same across stop() and start(), so a client can reconnect to
    the same URL after a restart (mount_server.py)."""

    scheme = "rtsp"
    what = "RTSP server"
    error = RtspServerError
    ready_line = READY_LINE
    files_prefix = "rtsp-server-"

    def __init__(
        self,
        mounts: Sequence[Mount],
        port: int | None = None,
        host: str = "127.0.0.1",
        user: str | None = None,
        password: str | None = None,
        python: str | None = None,
    ) -> None:
        super().__init__(mounts, port, host, user, password)
        self._python = python or gstreamer_python()

    def _mount_config(self, mount: Mount) -> dict[str, Any]:
        return {**asdict(mount), "path": str(Path(mount.path).resolve()), "fps": _fps(mount.fps)}

    def _spawn(self, config_path: Path) -> LoggedProcess:
        try:
            return LoggedProcess(
                [self._python, str(SERVER_SCRIPT), "--config", str(config_path)], self.files_prefix
            )
        except OSError as error:
            raise RtspServerError(f"cannot run {self._python}: {error}") from error

    def _answers(self) -> bool:
        return rtsp_options_ok(self.host, self.port)


def _fps(fps: int | str | None) -> str | None:
    return None if fps is None else str(fps)


def rtsp_options_ok(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether an RTSP server on host:port answers OPTIONS with 200 (no auth is needed for it)."""
    request = f"OPTIONS rtsp://{host}:{port}/ RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: stream-worker\r\n\r\n"
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request.encode())
            answer = sock.recv(1024)
    except OSError:
        return False
    return answer.startswith(b"RTSP/1.0 200")
