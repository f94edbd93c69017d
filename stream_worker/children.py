"""A watchdog that kills a command's child process groups if the command itself dies uncleanly.

The demo stops its servers in `finally` blocks and signal handlers, but nothing runs in a process
killed with SIGKILL (or by the OOM killer), and Linux has no portable "die with your parent".
So the demo starts this small watchdog first, in its own session, and tells it the process group
of every child it starts through a pipe. The demo says `done` once it has stopped them all
itself; if the pipe closes without that, its owner is gone and the watchdog kills every group it
was told about.

Run as `python -m stream_worker.children` (stdin: one process-group id per line, then `done`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import TextIO

DONE = "done"


class Watchdog:
    """The owner's side: start the watchdog, tell it about each child group, release it at the end."""

    def __init__(self) -> None:
        self.groups: list[int] = []
        self._process = subprocess.Popen(
            [sys.executable, "-m", "stream_worker.children"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # a terminal's Ctrl-C must not take it down with its owner
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def watch(self, pgid: int) -> None:
        """Kill process group `pgid` should this process die before calling `release`."""
        if pgid in self.groups:
            return
        self.groups.append(pgid)
        assert self._process.stdin is not None
        self._process.stdin.write(f"{pgid}\n")
        self._process.stdin.flush()

    def kill_all(self) -> None:
        """SIGKILL every watched group now (a second Ctrl-C while stopping)."""
        for pgid in self.groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def release(self) -> None:
        """Everything was stopped cleanly: let the watchdog exit without killing anything."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.write(f"{DONE}\n")
                stdin.flush()
            with contextlib.suppress(BrokenPipeError):
                stdin.close()
        self._process.wait()


def watch(stream: TextIO) -> None:
    """The watchdog's side: collect group ids until `done` (return) or end of input (kill them)."""
    groups: list[int] = []
    for line in stream:
        entry = line.strip()
        if entry == DONE:
            return
        if entry.isdigit():
            groups.append(int(entry))
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(sys.stdin)
