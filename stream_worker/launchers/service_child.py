"""`python -m stream_worker COMMAND ...` as a child process, exactly what production runs, with its
output in a log file: what the demo, the benchmarks and the integration tests start and stop.

Its HTTP port is the one given (`--metrics-port` is added) or, without one, read from the JSON start
log line that carries `metrics_port`. Ready once /readyz answers 200."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 3000


class ServiceStartError(RuntimeError):
    """The service exited during start-up (`exit_code` set) or was not ready in time (`exit_code` None)."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


class ServiceChild:
    """One `stream-worker COMMAND` child; `start()` starts it, `wait_ready()` waits for /readyz."""

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        log_path: Path,
        *,
        metrics_port: int | None = None,
        own_session: bool = True,
        append_log: bool = False,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.log_path = log_path
        self._port = metrics_port
        port_args = ["--metrics-port", str(metrics_port)] if metrics_port is not None else []
        self.argv = [sys.executable, "-m", "stream_worker", command, *args, *port_args]
        self._own_session = own_session  # a terminal's Ctrl-C reaches only the parent, which stops it
        self._log_mode = "ab" if append_log else "wb"
        self._cwd = cwd
        self._env = {**os.environ, **env} if env else None  # more variables (a target's secret)
        self.process: subprocess.Popen[bytes] | None = None
        self.log_offset = 0  # where the output of the last start begins in the log (appended to)

    def start(self) -> ServiceChild:
        with self.log_path.open(self._log_mode) as log_file:
            self.log_offset = log_file.tell() if self._log_mode == "ab" else 0
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self._cwd,
                env=self._env,
                start_new_session=self._own_session,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.command} was not started"
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """None while running (or never started)."""
        return self.process.poll() if self.process is not None else None

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def metrics_port(self) -> int | None:
        """The port given, or the one in the start log line; None until that line is written."""
        if self._port is None:
            for line in self.log_lines():
                if isinstance(port := line.get("metrics_port"), int):
                    self._port = port
                    break
        return self._port

    def log_lines(self) -> list[dict]:
        """The JSON lines of its log."""
        lines = []
        with contextlib.suppress(OSError):
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    with contextlib.suppress(ValueError):
                        lines.append(json.loads(line))
        return lines

    def said(self) -> list[str]:
        """The lines of the last start's output that are no JSON log record: what it says to a
        person (the store's console prints its first admin password so, once)."""
        try:
            with self.log_path.open("rb") as log_file:
                log_file.seek(self.log_offset)
                text = log_file.read().decode(errors="replace")
        except OSError:
            return []
        return [line.rstrip() for line in text.splitlines() if line.strip() and not line.startswith("{")]

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def wait_ready(
        self, timeout_s: float = READY_TIMEOUT_S, poll_s: float = 0.2, check: Callable[[], None] | None = None
    ) -> None:
        """Until /readyz answers 200; ServiceStartError when it exits first or `timeout_s` passes.
        `check` raises when something else failed meanwhile."""
        deadline = time.monotonic() + timeout_s
        while True:
            if check is not None:
                check()
            assert self.process is not None, f"{self.command} was not started"
            if (code := self.process.poll()) is not None:
                raise ServiceStartError(
                    f"{self.command} exited with {code} during start-up; its log ends with:\n"
                    f"{self.log_tail()}",
                    code,
                )
            if (port := self.metrics_port) is not None and http_ok(f"http://127.0.0.1:{port}/readyz"):
                return
            if time.monotonic() > deadline:
                raise ServiceStartError(
                    f"{self.command} was not ready after {timeout_s:.0f} s; its log ends with:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(poll_s)

    def kill(self) -> None:
        """SIGKILL at once (its process group, when in its own session), as a crash would."""
        if self.is_running():
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                if self._own_session:
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """`signum` (SIGTERM: it drains, commits and exits 0), SIGKILL if it overruns `timeout_s`;
        the exit code (None if never started)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signum)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return process.wait()
