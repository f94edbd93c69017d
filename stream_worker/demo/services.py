"""The demo's services: `python -m stream_worker run`, `... sightings` and the others as child
processes, each exactly what production runs, with its log in the demo's scratch folder and its own
HTTP port.

Each starts in its own session (a terminal's Ctrl-C reaches the demo alone, which stops them in
order) and is stopped with SIGTERM (drain, commit, exit 0), killed if it overruns its timeout.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from stream_worker.launchers import service_child
from stream_worker.launchers.ports import free_port

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


class ServiceChild(service_child.ServiceChild):
    """One `stream-worker COMMAND` child with the demo's port, log and shutdown timeout."""

    def __init__(
        self, command: str, args: Sequence[str], workdir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.port = free_port()
        args = [*args, "--metrics-host", "127.0.0.1", "--shutdown-timeout-s", str(SHUTDOWN_S)]
        super().__init__(command, args, workdir / f"{command}.log", metrics_port=self.port, env=env)

    @property
    def pid(self) -> int | None:  # type: ignore[override]
        return self.process.pid if self.process is not None else None

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def wait_ready(self, check: Callable[[], None]) -> None:  # type: ignore[override]
        """Until /readyz says ready; `check` raises when something else failed meanwhile."""
        try:
            super().wait_ready(READY_TIMEOUT_S, POLL_S, check)
        except service_child.ServiceStartError as error:
            if error.exit_code is not None:
                check()  # the demo's own report of a child that exited
                raise
            raise TimeoutError(
                f"{self.command} was not ready after {READY_TIMEOUT_S:.0f} s; its log ends with:\n"
                f"{log_tail(self.log_path)}"
            ) from error

    def exit_code(self) -> int | None:
        """None while running (or never started)."""
        return self.returncode

    def stop(self) -> None:  # type: ignore[override]
        """SIGTERM: it drains, commits and exits 0; killed if it overruns its timeout."""
        if self.is_running() and super().stop(timeout_s=SHUTDOWN_S + 5.0) == -signal.SIGKILL:
            log.warning("%s did not stop within %.0f s; it was killed", self.command, SHUTDOWN_S + 5.0)
