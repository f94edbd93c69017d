"""What the local camera servers (MJPEG: mjpeg.py, RTSP: rtsp.py) share as child processes: mounts
by unique name, URLs with quoted credentials, a private config file (the password never on the
command line, where `ps` shows it), a start that returns once the server answers, and stop, kill
and a start again on the same port (a camera that reboots)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar
from urllib.parse import quote

from stream_worker.launchers.ports import free_port
from stream_worker.launchers.process import LoggedProcess


class NamedMount(Protocol):
    @property
    def name(self) -> str: ...


M = TypeVar("M", bound=NamedMount)


class MountServer(ABC, Generic[M]):
    """One camera server on `host`:`port` (a free port when None) serving `mounts`; `user` and
    `password`: basic auth on every mount. Subclasses say how to run the server (`_spawn`), what a
    mount's config is, and how to tell that it answers."""

    scheme: ClassVar[str]  # of the URLs
    mount_suffix: ClassVar[str] = ""  # after the mount's name in its URL
    what: ClassVar[str]  # for messages: "MJPEG server"
    error: ClassVar[type[Exception]]
    ready_line: ClassVar[str]  # what the server prints once it listens
    files_prefix: ClassVar[str]  # of its config folder and its log file

    def __init__(
        self,
        mounts: Sequence[M],
        port: int | None = None,
        host: str = "127.0.0.1",
        user: str | None = None,
        password: str | None = None,
    ) -> None:
        if not mounts:
            raise ValueError(f"an {self.what} needs at least one mount")
        names = [mount.name for mount in mounts]
        if len(set(names)) != len(names):
            raise ValueError(f"mount names must be unique: {names}")
        self.mounts = list(mounts)
        self.host = host
        self.port = port if port is not None else free_port()
        self.user = user
        self._password = password
        self._process: LoggedProcess | None = None
        self._config_dir: tempfile.TemporaryDirectory[str] | None = None

    def url(self, mount: str, user: str | None = None, password: str | None = None) -> str:
        """The mount's URL, with `user:password@` when given (quoted)."""
        if mount not in {m.name for m in self.mounts}:
            raise KeyError(f"no mount {mount!r}; mounts: {[m.name for m in self.mounts]}")
        return f"{self.base_url(user, password)}/{mount}{self.mount_suffix}"

    def authorized_url(self, mount: str) -> str:
        """url() with the server's own credentials (just url() when it has none)."""
        return self.url(mount, self.user, self._password)

    def base_url(self, user: str | None = None, password: str | None = None) -> str:
        credentials = ""
        if user is not None:
            secret = f":{quote(password, safe='')}" if password is not None else ""
            credentials = f"{quote(user, safe='')}{secret}@"
        return f"{self.scheme}://{credentials}{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()

    def start(self, timeout_s: float = 30.0) -> Self:
        """Start the server and return once it answers."""
        if self.is_running():
            return self
        config = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self._password,
            "mounts": [self._mount_config(mount) for mount in self.mounts],
        }
        if self._config_dir is None:
            self._config_dir = tempfile.TemporaryDirectory(prefix=self.files_prefix)
        config_path = Path(self._config_dir.name) / "config.json"
        config_path.touch(mode=0o600)
        config_path.write_text(json.dumps(config))
        self._process = self._spawn(config_path)
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    @abstractmethod
    def _mount_config(self, mount: M) -> dict[str, Any]:
        """What the server's config file says of one mount."""

    @abstractmethod
    def _spawn(self, config_path: Path) -> LoggedProcess:
        """Run the server on its config file."""

    @abstractmethod
    def _answers(self) -> bool:
        """Whether the server answers its protocol on host:port."""

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.is_running():
                raise self.error(f"the {self.what} exited while starting: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise self.error(
                    f"the {self.what} did not answer on {self.host}:{self.port} after {timeout_s:.0f} s: "
                    f"{self.log_tail()}"
                )
            if self.ready_line in self.log_tail() and self._answers():
                return
            time.sleep(0.05)

    def log_tail(self) -> str:
        """The end of what the server wrote (no credentials: it never prints them)."""
        return self._process.log_tail() if self._process is not None else ""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM to the server's process group, SIGKILL if it lingers; the port stays this
        server's to start again on."""
        process, self._process = self._process, None
        if process is None:
            return
        signal_group(process.pid, signal.SIGTERM)
        if not process.stop(timeout_s):
            signal_group(process.pid, signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL at once: its clients' connections drop, as when a camera loses power."""
        if self._process is not None:
            signal_group(self._process.pid, signal.SIGKILL)
        self.stop()

    def close(self) -> None:
        """stop(), and remove the config file."""
        self.stop()
        if self._config_dir is not None:
            self._config_dir.cleanup()
            self._config_dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def signal_group(pid: int, signum: signal.Signals) -> None:
    """`signum` to the process group `pid` leads, if it still runs."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
