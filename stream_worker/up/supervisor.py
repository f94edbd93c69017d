"""Keep the children running: a child found dead is started again after its restart delay
(restarts.py), each death and restart said and counted; every process group a child starts is
handed to the watchdog, so that a killed `up` leaves none behind. Children stop newest first."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from stream_worker.up.children import Child
from stream_worker.up.restarts import RestartPolicy, Restarts

log = logging.getLogger(__name__)


class Watcher(Protocol):
    """What the supervisor tells about each process group it starts (children.Watchdog's `watch`)."""

    def watch(self, pgid: int) -> None: ...


@dataclass
class Supervised:
    child: Child
    restarts: Restarts
    last_exit: str | None = None
    running: bool = False  # started, not yet found dead
    stopped: bool = False  # stopped by `stop`: not to be restarted


class Supervisor:
    def __init__(
        self,
        watcher: Watcher,
        policy: RestartPolicy,
        stopping: threading.Event,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._watcher = watcher
        self._policy = policy
        self._stopping = stopping
        self._say = say
        self._clock = clock
        self.children: list[Supervised] = []

    def start(self, child: Child) -> None:
        """The first start of `child` (added to those supervised even when it fails, so that it is
        stopped with the others); its error propagates."""
        entry = Supervised(child, Restarts(self._policy))
        self.children.append(entry)
        try:
            child.start(self._stopping)
        finally:
            self._watch(child)
        entry.restarts.started(self._clock())
        entry.running = True

    def check(self) -> None:
        """Restart whatever died, once its delay has passed; one pass over the children."""
        for entry in self.children:
            if self._stopping.is_set():
                return
            now = self._clock()
            child = entry.child
            if entry.running and not child.is_running():
                entry.running = False
                entry.last_exit = child.exit_reason()
                delay = entry.restarts.died(now)
                when = "now" if delay <= 0 else f"in {delay:.0f} s"
                self._say(f"{child.name} died ({entry.last_exit}); restarting it {when}")
            if not entry.running and entry.restarts.due(now):
                self._restart(entry)

    def _restart(self, entry: Supervised) -> None:
        child = entry.child
        try:
            child.start(self._stopping)
        except Exception as error:
            entry.last_exit = f"restart failed: {error}"
            delay = entry.restarts.died(self._clock())
            self._say(f"{child.name} could not start ({error}); trying again in {delay:.0f} s")
            return
        finally:
            self._watch(child)
        entry.restarts.restarted(self._clock())
        entry.running = True
        pids = ", ".join(str(pid) for pid in child.process_groups())
        self._say(f"{child.name} restarted (restart {entry.restarts.count}, pid {pids})")

    def _watch(self, child: Child) -> None:
        for pgid in child.process_groups():
            self._watcher.watch(pgid)

    def stop(self) -> None:
        """Stop every child, newest first (the services, then Triton, then the broker); a child
        that fails to stop does not keep the others running."""
        for entry in reversed(self.children):
            try:
                entry.child.stop()
            except Exception as error:
                log.warning("stopping %s failed: %s", entry.child.name, error)
            entry.running = False
            entry.stopped = True

    def status(self) -> dict[str, dict[str, object]]:
        """Each child's pid(s), state, restarts and last exit, with what the child adds (its URL...)."""
        return {
            entry.child.name: {
                "state": _state(entry),
                "pids": entry.child.process_groups() if entry.running else [],
                "restarts": entry.restarts.count,
                "last_exit": entry.last_exit,
                **entry.child.status(),
            }
            for entry in self.children
        }


def _state(entry: Supervised) -> str:
    if entry.stopped:
        return "stopped"
    return "running" if entry.running else "restarting"
