"""A server child process with its output in a temporary log file: the part the broker and the
object store share (start in its own session, read the log's end for error messages, stop)."""

from __future__ import annotations

import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

LOG_TAIL_CHARS = 4000


class LoggedProcess:
    """One run of `command`. Its own session: a terminal's Ctrl-C reaches only us, and we stop it."""

    def __init__(self, command: Sequence[str], log_prefix: str, env: Mapping[str, str] | None = None) -> None:
        self._log_file = tempfile.NamedTemporaryFile(prefix=log_prefix, suffix=".log")  # noqa: SIM115
        self._process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def is_running(self) -> bool:
        return self._process.poll() is None

    def log_tail(self) -> str:
        """The end of what the process wrote, to put in error messages."""
        if self._log_file.closed:
            return ""
        return Path(self._log_file.name).read_text(errors="replace")[-LOG_TAIL_CHARS:].strip()

    def kill(self) -> None:
        """SIGKILL at once, as a crash would."""
        if self.is_running():
            self._process.kill()

    def stop(self, timeout_s: float = 10.0, signum: signal.Signals = signal.SIGTERM) -> bool:
        """`signum`, then SIGKILL if it has not exited within `timeout_s`; the log goes too.

        Returns False when it had to be killed."""
        exited = True
        if self.is_running():
            self._process.send_signal(signum)
            try:
                self._process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                exited = False
                self._process.kill()
                self._process.wait()
        self._log_file.close()
        return exited
