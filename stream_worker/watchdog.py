"""A watchdog that kills a command's child process groups if the command itself dies uncleanly.

The demo stops its servers in `finally` blocks and signal handlers, but nothing runs in a process
killed with SIGKILL (or by the OOM killer), and Linux has no portable "die with your parent".
So the demo starts this small watchdog first, in its own session, and tells it the process group
of every child it starts through a pipe. The demo says `done` once it has stopped them all
itself; if the pipe closes without that, its owner is gone and the watchdog stops every group it
was told about: SIGTERM first, so that Triton can remove its shared-memory regions and the worker
can leave its group, then SIGKILL for whatever is still there after a grace period.

Run as `python -m stream_worker.watchdog` (stdin: one process-group id per line, then `done`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from typing import TextIO

DONE = "done"
GRACE_S = 15.0  # longer than the servers' own SIGTERM handling takes (Triton unloads, Tansu ~5 s)


class Watchdog:
    """The owner's side: start the watchdog, tell it about each child group, release it at the end."""

    def __init__(self) -> None:
        self.groups: list[int] = []
        self._process = subprocess.Popen(
            [sys.executable, "-m", "stream_worker.watchdog"],
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


def watch(stream: TextIO, grace_s: float = GRACE_S) -> None:
    """The watchdog's side: collect group ids until `done` (return) or end of input (stop them)."""
    groups: list[int] = []
    for line in stream:
        entry = line.strip()
        if entry == DONE:
            return
        if entry.isdigit():
            groups.append(int(entry))
    terminate(groups, grace_s)


def terminate(groups: list[int], grace_s: float) -> None:
    """SIGTERM every group, wait up to `grace_s` for them to be gone, SIGKILL what is left."""
    alive = [pgid for pgid in groups if _signal_group(pgid, signal.SIGTERM)]
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [pgid for pgid in alive if _signal_group(pgid, 0)]
    for pgid in alive:
        _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> bool:
    """False once the group has no process left (or is not ours to signal)."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(sys.stdin)
