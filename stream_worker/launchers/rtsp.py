"""A local RTSP server (GStreamer's, run by the system Python) serving video files as live cameras.

For the tests and the demo: each mount serves a file looped forever as H.264 over RTSP with
timestamps that run on across loops, like a camera. GStreamer's Python bindings are Debian
packages for the system interpreter (`scripts/test-servers.sh` installs them), not for the project's
virtual environment, so the server itself is `rtsp_server.py` beside this file, started with that
interpreter; this class starts it on a port, waits until it answers RTSP, stops it, and starts it
again on the same port (a camera that reboots).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from stream_worker.launchers.broker import free_port
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


class LocalRtspServer:
    """GStreamer's RTSP server on `host`:`port` (a free port when None) serving `mounts`.

    `user`/`password`: HTTP-style basic auth on every mount (a client without them or with wrong
    ones gets 401). The port stays the same across stop() and start(), so a client can reconnect to
    the same URL after a restart."""

    def __init__(
        self,
        mounts: Sequence[Mount],
        port: int | None = None,
        host: str = "127.0.0.1",
        user: str | None = None,
        password: str | None = None,
        python: str | None = None,
    ) -> None:
        if not mounts:
            raise ValueError("an RTSP server needs at least one mount")
        names = [mount.name for mount in mounts]
        if len(set(names)) != len(names):
            raise ValueError(f"mount names must be unique: {names}")
        self.mounts = list(mounts)
        self.host = host
        self.port = port if port is not None else free_port()
        self.user = user
        self._password = password
        self._python = python or gstreamer_python()
        self._process: LoggedProcess | None = None
        self._config_dir: tempfile.TemporaryDirectory[str] | None = None

    def url(self, mount: str, user: str | None = None, password: str | None = None) -> str:
        """rtsp://host:port/mount, with `user:password@` when given (quoted)."""
        if mount not in {m.name for m in self.mounts}:
            raise KeyError(f"no mount {mount!r}; mounts: {[m.name for m in self.mounts]}")
        credentials = ""
        if user is not None:
            secret = f":{quote(password, safe='')}" if password is not None else ""
            credentials = f"{quote(user, safe='')}{secret}@"
        return f"rtsp://{credentials}{self.host}:{self.port}/{mount}"

    def authorized_url(self, mount: str) -> str:
        """url() with the server's own credentials (just url() when it has none)."""
        return self.url(mount, self.user, self._password)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()

    def start(self, timeout_s: float = 30.0) -> LocalRtspServer:
        """Start the server and return once it answers an RTSP OPTIONS request."""
        if self.is_running():
            return self
        config = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self._password,
            "mounts": [
                {**asdict(mount), "path": str(Path(mount.path).resolve()), "fps": _fps(mount.fps)}
                for mount in self.mounts
            ],
        }
        # The password goes in a private file rather than on the command line, where `ps` shows it.
        if self._config_dir is None:
            self._config_dir = tempfile.TemporaryDirectory(prefix="rtsp-server-")
        config_path = Path(self._config_dir.name) / "config.json"
        config_path.touch(mode=0o600)
        config_path.write_text(json.dumps(config))
        try:
            self._process = LoggedProcess(
                [self._python, str(SERVER_SCRIPT), "--config", str(config_path)], "rtsp-server-"
            )
        except OSError as error:
            raise RtspServerError(f"cannot run {self._python}: {error}") from error
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.is_running():
                raise RtspServerError(f"the RTSP server exited while starting: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise RtspServerError(
                    f"the RTSP server did not answer on {self.host}:{self.port} after {timeout_s:.0f} s: "
                    f"{self.log_tail()}"
                )
            if READY_LINE in self.log_tail() and rtsp_options_ok(self.host, self.port):
                return
            time.sleep(0.05)

    def log_tail(self) -> str:
        """The end of what the server wrote (no credentials: it never prints them)."""
        return self._process.log_tail() if self._process is not None else ""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM to the server's process group, SIGKILL if it lingers; the port stays ours to reuse."""
        process, self._process = self._process, None
        if process is None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        if not process.stop(timeout_s):
            _signal_group(process.pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the server at once, as a crash or a power cut would."""
        if self._process is not None:
            _signal_group(self._process.pid, signal.SIGKILL)
        self.stop()

    def close(self) -> None:
        """stop(), and remove the config file."""
        self.stop()
        if self._config_dir is not None:
            self._config_dir.cleanup()
            self._config_dir = None

    def __enter__(self) -> LocalRtspServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _fps(fps: int | str | None) -> str | None:
    return None if fps is None else str(fps)


def _signal_group(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


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
