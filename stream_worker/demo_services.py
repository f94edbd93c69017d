"""The demo's services: `python -m stream_worker run` and `... sightings` as child processes, each
exactly what production runs, with its log in the demo's scratch folder and its own HTTP port.

Each starts in its own session (a terminal's Ctrl-C reaches the demo alone, which stops them in
order) and is stopped with SIGTERM (drain, commit, exit 0), killed if it overruns its timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from stream_worker.launchers.broker import free_port

log = logging.getLogger(__name__)

SHUTDOWN_S = 15.0
READY_TIMEOUT_S = 120.0
POLL_S = 0.2
LOG_TAIL_CHARS = 3000


def log_tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL_CHARS:].strip() or "(empty)"
    except OSError:
        return "(no log)"


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


class ServiceChild:
    """One `stream-worker COMMAND` child; `start()` returns once its /readyz answers 200."""

    def __init__(self, command: str, args: Sequence[str], workdir: Path) -> None:
        self.command = command
        self.port = free_port()
        self.log_path = workdir / f"{command}.log"
        self._args = [
            *args,
            "--metrics-host", "127.0.0.1",
            "--metrics-port", str(self.port),
            "--shutdown-timeout-s", str(SHUTDOWN_S),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> None:
        with self.log_path.open("wb") as log_file:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "stream_worker", self.command, *self._args],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches the demo only; it stops its children in order
            )

    def wait_ready(self, check: Callable[[], None]) -> None:
        """Until /readyz says ready; `check` raises when something else failed meanwhile."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not http_ok(f"http://127.0.0.1:{self.port}/readyz"):
            check()
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.command} was not ready after {READY_TIMEOUT_S:.0f} s; its log ends with:\n"
                    f"{log_tail(self.log_path)}"
                )
            time.sleep(POLL_S)

    def exit_code(self) -> int | None:
        """None while running (or never started)."""
        return self.process.poll() if self.process is not None else None

    def stop(self) -> None:
        """SIGTERM: it drains, commits and exits 0; killed if it overruns its timeout."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(SHUTDOWN_S + 5.0)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %.0f s; killing it", self.command, SHUTDOWN_S + 5.0)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
