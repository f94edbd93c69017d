"""The demo's children: each handed to the watchdog as soon as it exists (so that they die with a
killed demo), and checked for an unexpected exit while the demo runs."""

from __future__ import annotations

from collections.abc import Callable

from stream_worker.demo.options import DemoError
from stream_worker.demo.services import ServiceChild, log_tail
from stream_worker.launchers.broker import LocalBroker
from stream_worker.launchers.triton import LocalTriton
from stream_worker.watchdog import Watchdog


class Liveness:
    def __init__(self) -> None:
        self.watchdog: Watchdog | None = None
        self.broker: LocalBroker | None = None
        self.triton: LocalTriton | None = None
        self.triton_starting = False  # its start (in a thread) reports its own failure
        self.services: list[ServiceChild] = []
        self.checks: list[Callable[[], None]] = []  # more to check (the producers)

    def start_watchdog(self) -> Watchdog:
        """Before the first child."""
        self.watchdog = Watchdog()
        return self.watchdog

    def watch(self) -> None:
        """Hand each child's process group to the watchdog as soon as it exists."""
        assert self.watchdog is not None
        children = (self.broker, self.triton, *self.services)
        for pid in (getattr(child, "pid", None) for child in children):
            if pid is not None:
                self.watchdog.watch(pid)

    def retire(self, service: ServiceChild) -> None:
        """A child the demo is stopping on purpose: its exit is no failure (the watchdog keeps it)."""
        if service in self.services:
            self.services.remove(service)

    def kill_all(self) -> None:
        if self.watchdog is not None:
            self.watchdog.kill_all()

    def check(self) -> None:
        """DemoError when a child exited (or anything in `checks` failed)."""
        if self.broker is not None and not self.broker.is_running():
            raise DemoError(f"the local broker exited unexpectedly: {self.broker.log_tail()}")
        if self.triton is not None and not self.triton_starting and not self.triton.is_running():
            raise DemoError(f"the local Triton exited unexpectedly:\n{self.triton.log_tail()}")
        for check in self.checks:
            check()
        for service in self.services:
            if (code := service.exit_code()) is not None:
                raise DemoError(
                    f"{service.command} exited unexpectedly with code {code}; its log ends with:\n"
                    f"{log_tail(service.log_path)}"
                )
