"""The run of `bench chaos`: the local stack started, the plan published, the faults driven.

Triton, the broker, the workers (`python -m stream_worker run`, as in production), the publisher
and the independent consumer (bench/chaos_traffic.py) are started here and stopped in reverse
order whatever happens; _drive strikes the faults (bench/chaos_faults.py) on cue until every
acknowledged frame has an output, the time limit, or a stall.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import environment
from bench.chaos_faults import Faults, Sampler, Schedule
from bench.chaos_logs import triton_log_findings, worker_log_findings
from bench.chaos_plan import Planned
from bench.chaos_traffic import Collector, Publisher

PROGRESS_EVERY_S = 15.0
TRAILING_DUPLICATES_WAIT_S = 3.0  # after the last frame's output, before the workers stop


class ChaosRun(Faults):
    """One run: the servers and workers started, the plan published, the faults struck on cue, then
    everything stopped and the results gathered (bench/chaos_report.py)."""

    def __init__(self, args: argparse.Namespace, plan: list[Planned]) -> None:
        self.args = args
        self.plan = plan
        self.rng = random.Random(args.seed + 1)
        self.settings = {"max_batch_frames": args.batch, "max_inflight_batches": args.inflight}
        self.worker_kills: list[dict[str, Any]] = []
        self.triton_kills: list[dict[str, Any]] = []
        self.crashes: list[dict[str, Any]] = []
        self.restarting: dict[int, threading.Thread] = {}  # worker number -> its start in progress
        self.log_dir = Path(tempfile.mkdtemp(prefix="stream-worker-chaos-"))
        self.started = time.monotonic()
        self.watch: Callable[[int], None] = lambda pgid: None  # the watchdog's, once it runs
        self.frames_topic = ""  # the run's frames topic, once it exists

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def run(self) -> None:
        from bench.stream import Topics, WorkerProcess
        from stream_worker.launchers.broker import LocalBroker, create_topics
        from stream_worker.launchers.triton import LocalTriton
        from stream_worker.watchdog import Watchdog

        args = self.args
        watchdog = Watchdog()
        self.watch = watchdog.watch
        with contextlib.ExitStack() as stack:
            stack.callback(shutil.rmtree, self.log_dir, ignore_errors=True)
            stack.callback(watchdog.release)
            print(f"[{self.elapsed()} s] starting Triton and the broker", flush=True)
            self.triton = LocalTriton(args.repository, model_config_name=args.model_config_name)
            stack.callback(self.triton.close)
            self.start_triton()
            self.initial_shm_regions_removed = len(self.triton.removed_shm_regions)
            broker = stack.enter_context(LocalBroker())
            watchdog.watch(broker.pid)
            topics = Topics.named(f"chaos-{uuid.uuid4().hex[:8]}")
            create_topics(
                broker.bootstrap_servers, [topics.frames, topics.plates, topics.dead_letters], args.partitions
            )
            self.collector = Collector(broker.bootstrap_servers, topics.plates, topics.dead_letters).begin()
            stack.callback(self.collector.stop)
            group = f"{topics.frames}-workers"
            self.workers = []
            for number in range(args.workers):
                worker = WorkerProcess(
                    broker.bootstrap_servers,
                    self.triton.grpc_url,
                    group,
                    topics,
                    self.settings,
                    self.log_dir,
                    watchdog.watch,
                )
                worker.log_path = self.log_dir / f"worker-{number}.log"
                self.workers.append(worker)
                stack.callback(worker.stop)
            for number in range(len(self.workers)):
                self.restart_worker(number)
            self.wait_for_restarts()
            self.sampler = Sampler(
                lambda: self.triton.pid, lambda: [w.pid for w in self.workers if w.is_running()]
            )
            self.sampler.start()
            stack.callback(self.sampler.stop)
            self.publisher = Publisher(
                broker.bootstrap_servers, topics.frames, self.plan, args.partitions, args.fps
            )
            print(
                f"[{self.elapsed()} s] publishing {len(self.plan)} frames at "
                f"{args.fps or 'full'} fps to {args.partitions} partitions; {args.workers} workers",
                flush=True,
            )
            self.publisher.start()
            stack.callback(self.publisher.stop)
            schedule = Schedule.draw(args.worker_kills, args.triton_kills, self.rng)
            self.complete, self.stopped_because = self._drive(schedule)
            if schedule.actions:
                self.stopped_because += f"; {len(schedule.actions)} faults never struck"
            self.wait_for_restarts()
            time.sleep(TRAILING_DUPLICATES_WAIT_S)
            self.sampler.sample()
            self.worker_exit_codes = [worker.stop() for worker in self.workers]
            self.publisher.stop()
            self.collector.stop()
            self.sampler.stop()
            self.triton_log_lines = triton_log_findings(self.triton.log_path)
            if args.logs:
                args.logs.mkdir(parents=True, exist_ok=True)
                for log in [*self.log_dir.glob("*.log"), self.triton.log_path]:
                    with contextlib.suppress(OSError):
                        shutil.copy2(log, args.logs / log.name)
            self.worker_log_findings = worker_log_findings(w.log_path for w in self.workers)
            self.frames_topic = topics.frames

    # --- driving the faults ---------------------------------------------------------------

    def _expected_outputs(self) -> int:
        if not self.publisher.finished.is_set():
            return len(self.plan)
        return len(self.publisher.sources)

    def _drive(self, schedule: Schedule) -> tuple[bool, str]:
        """Until every acknowledged frame has an output, the time limit, or a stall. The faults
        strike on cue, at their fractions of the run: of the frames published for a paced stream
        (moments spread over its time), of the frames answered for a backlog (published at once).
        Either way a fifth of the frames at least is still to come after each."""
        deadline = self.started + self.args.time_limit_s
        last_progress, last_count, last_print = time.monotonic(), 0, 0.0
        while True:
            now = time.monotonic()
            answered = len(self.collector.sources)
            if answered != last_count:
                last_count, last_progress = answered, now
            self.restart_crashed()
            done = self.publisher.published if self.args.fps > 0 else answered
            for action in schedule.due(done / max(1, len(self.plan))):
                if action == "triton":
                    self.kill_triton()
                elif not self.kill_worker():
                    schedule.actions.insert(0, (0.0, action))  # every worker is starting: soon
                    break
                last_progress = time.monotonic()
            if now - last_print >= PROGRESS_EVERY_S:
                last_print = now
                self._print_progress(answered)
            if self.publisher.finished.is_set():
                if self.publisher.errors:
                    return False, f"publishing failed: {self.publisher.errors[0]}"
                if answered >= self._expected_outputs() and not schedule.actions:
                    self._print_progress(answered)
                    return True, "every acknowledged frame has an output"
                if now - last_progress > self.args.settle_s:
                    return False, f"no new output for {self.args.settle_s:.0f} s"
            if now > deadline:
                return False, f"time limit of {self.args.time_limit_s:.0f} s reached"
            time.sleep(0.2)

    def _print_progress(self, answered: int) -> None:
        outputs = self.collector.outputs
        dead = sum(1 for output in outputs if output.dead_letter)
        print(
            f"[{self.elapsed()} s] published {self.publisher.published}/{len(self.plan)}, answered "
            f"{answered}, records out {len(outputs)} ({len(outputs) - dead} events, {dead} dead letters), "
            f"worker kills {len(self.worker_kills)}/{self.args.worker_kills}, Triton kills "
            f"{len(self.triton_kills)}/{self.args.triton_kills}, load {environment.load_average()[0]}",
            flush=True,
        )
