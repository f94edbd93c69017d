"""The faults of a `bench chaos` run: when they strike, how, and what the processes weigh meanwhile.

Schedule draws the moments; Faults (a mixin of ChaosRun, bench/chaos_run.py) SIGKILLs a worker or
Triton and starts it again, and restarts what crashed on its own, recording each for the report;
Sampler keeps the peak memory of Triton (with its backend stubs) and of the workers over every
incarnation, read from /proc like bench/cpu.py.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.cpu import stat_fields

if TYPE_CHECKING:
    from bench.chaos_traffic import Collector, Publisher
    from bench.stream import WorkerProcess
    from stream_worker.launchers.triton import LocalTriton

KILL_WINDOW = (0.03, 0.8)  # faults strike between these fractions of the run (see ChaosRun._drive)
SAMPLE_EVERY_S = 1.0
TRITON_START_TIMEOUT_S = 600.0
TRITON_EXIT_WAIT_S = 30.0
WORKER_START_WAIT_S = 400.0  # 3 attempts of bench.stream's ready timeout, and some


@dataclass
class Schedule:
    """The fractions of the run (see ChaosRun._drive) at which each fault strikes, in order."""

    actions: list[tuple[float, str]]

    @classmethod
    def draw(cls, worker_kills: int, triton_kills: int, rng: random.Random) -> Schedule:
        low, high = KILL_WINDOW
        actions = [(rng.uniform(low, high), "worker") for _ in range(worker_kills)]
        actions += [(rng.uniform(low, high), "triton") for _ in range(triton_kills)]
        return cls(sorted(actions))

    def due(self, progress: float) -> list[str]:
        due = [action for at, action in self.actions if at <= progress]
        self.actions = [(at, action) for at, action in self.actions if at > progress]
        return due


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group `pgid`: Triton and its backend stubs."""
    members = []
    for entry in os.listdir("/proc"):
        fields = stat_fields(entry) if entry.isdigit() else None
        if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


class Sampler(threading.Thread):
    """Once a second: Triton's resident memory (the server, and server + backend stubs summed) and
    each live worker's peak (VmHWM); keeps the maxima over every incarnation."""

    def __init__(self, triton_pid: Callable[[], int | None], worker_pids: Callable[[], list[int]]) -> None:
        super().__init__(name="chaos-sampler", daemon=True)
        self.triton_server_peak_kib = 0
        self.triton_group_peak_kib = 0
        self.worker_peak_kib = 0
        self._triton_pid, self._worker_pids = triton_pid, worker_pids
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(SAMPLE_EVERY_S):
            self.sample()

    def sample(self) -> None:
        if (pid := self._triton_pid()) is not None:
            self.triton_server_peak_kib = max(self.triton_server_peak_kib, _status_kib(pid, "VmHWM"))
            group = sum(_status_kib(member, "VmRSS") for member in group_members(pid))
            self.triton_group_peak_kib = max(self.triton_group_peak_kib, group)
        for pid in self._worker_pids():
            self.worker_peak_kib = max(self.worker_peak_kib, _status_kib(pid, "VmHWM"))

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)


class Faults:
    """ChaosRun's faults (a mixin): a worker or Triton SIGKILLed and started again, and a process
    that exited on its own recorded as a crash and restarted."""

    # ChaosRun's: set before these methods are called.
    args: argparse.Namespace
    rng: random.Random
    triton: LocalTriton
    workers: list[WorkerProcess]
    sampler: Sampler
    publisher: Publisher
    collector: Collector
    worker_kills: list[dict[str, Any]]
    triton_kills: list[dict[str, Any]]
    crashes: list[dict[str, Any]]
    restarting: dict[int, threading.Thread]  # worker number -> its start in progress
    watch: Callable[[int], None]  # the watchdog's
    elapsed: Callable[[], float]

    def restart_crashed(self) -> None:
        """A process that died without being killed here is a crash: recorded, then restarted."""
        if not self.triton.is_running():
            self.crashes.append(
                {"process": "triton", "at_s": self.elapsed(), "log_tail": self.triton.log_tail(20)}
            )
            print(f"[{self.elapsed()} s] CRASH: Triton exited on its own; restarting", flush=True)
            self.start_triton()
        for number, worker in enumerate(self.workers):
            if number not in self.restarting and not worker.is_running():
                code = worker.stop()
                self.crashes.append(
                    {
                        "process": f"worker-{number}",
                        "at_s": self.elapsed(),
                        "exit_code": code,
                        "log_tail": worker.log_tail(2000),
                    }
                )
                print(f"[{self.elapsed()} s] CRASH: worker {number} exited ({code}); restarting", flush=True)
                self.restart_worker(number)

    def restart_worker(self, number: int, record: dict[str, Any] | None = None) -> None:
        """Start worker `number` in the background (until ready: partitions assigned, Triton ready),
        so that the stream and the other faults go on meanwhile; `record` gets the seconds taken."""
        from bench.pipeline import BenchError

        def start() -> None:
            worker = self.workers[number]
            started = time.monotonic()
            try:
                for attempt in range(3):
                    try:
                        worker.start()
                        break
                    except BenchError as error:
                        print(f"[{self.elapsed()} s] worker {number} start failed ({attempt + 1}/3): {error}")
                        worker.stop()
                if record is not None:
                    record["restart_s"] = round(time.monotonic() - started, 2)
            finally:
                self.restarting.pop(number, None)

        thread = threading.Thread(target=start, name=f"chaos-start-worker-{number}", daemon=True)
        self.restarting[number] = thread
        thread.start()

    def wait_for_restarts(self) -> None:
        for thread in list(self.restarting.values()):
            thread.join(WORKER_START_WAIT_S)

    def kill_worker(self) -> bool:
        """SIGKILL a running worker picked at random and start it again; False if none runs."""
        running = [n for n, w in enumerate(self.workers) if n not in self.restarting and w.is_running()]
        if not running:
            return False
        number = self.rng.choice(running)
        worker = self.workers[number]
        self.sampler.sample()
        peak = _status_kib(worker.pid, "VmHWM")
        record = {
            "at_s": self.elapsed(),
            "worker": number,
            "published_before": self.publisher.published,
            "answered_before": len(self.collector.sources),
            "peak_rss_mib": round(peak / 1024, 1),
            "restart_s": None,
        }
        os.kill(worker.pid, signal.SIGKILL)
        worker.stop()  # reaps it
        self.worker_kills.append(record)
        print(
            f"[{self.elapsed()} s] SIGKILL worker {number} "
            f"({len(self.worker_kills)}/{self.args.worker_kills})",
            flush=True,
        )
        self.restart_worker(number, record)
        return True

    def start_triton(self) -> tuple[float, int]:
        started = time.monotonic()
        self.triton.start(timeout_s=TRITON_START_TIMEOUT_S)
        assert self.triton.pid is not None
        self.watch(self.triton.pid)
        return time.monotonic() - started, len(self.triton.removed_shm_regions)

    def kill_triton(self) -> None:
        self.sampler.sample()
        pid = self.triton.pid
        assert pid is not None
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + TRITON_EXIT_WAIT_S
        while self.triton.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        orphans = len([member for member in group_members(pid) if member != pid])
        start_s, removed = self.start_triton()
        ready_at = time.time()
        self.triton_kills.append(
            {
                "at_s": self.elapsed(),
                "published_before": self.publisher.published,
                "answered_before": len(self.collector.sources),
                "orphaned_stubs": orphans,
                "shm_regions_removed": removed,
                "restart_s": round(ready_at - killed_at, 2),
                "start_s": round(start_s, 2),
                "killed_at": killed_at,
                "ready_at": ready_at,
            }
        )
        print(
            f"[{self.elapsed()} s] SIGKILL Triton ({len(self.triton_kills)}/{self.args.triton_kills}): "
            f"{orphans} orphaned stubs killed, {removed} stale shared-memory regions removed, ready again "
            f"{ready_at - killed_at:.1f} s after the kill",
            flush=True,
        )

    # --- findings ---------------------------------------------------------------------------
