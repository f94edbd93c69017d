"""`stream` and `sweep`: Kafka end to end with the local broker, the local Triton and the worker.

The worker runs as it does in production, `python -m stream_worker run` in its own process, so
its memory (peak RSS from /proc) and its CPU share are its own. The benchmark reads the output
topic from the side and times each event when it becomes readable there.

- backlog: N frames are published before the worker starts; the drain rate runs from the
  worker's first consumption (its event's processed_at minus latency_ms) to the last event
  readable. Worker latency (consume -> event) is reported; captured_at latency is meaningless for
  frames that waited in a backlog.
- live: `cameras` producers publish at `fps` each for `live_seconds`; reported: the achieved rate
  while they publish, the end-to-end lag in frames (published but not yet readable as an event,
  sampled every half second; Tansu's high watermarks are unreliable, so the worker's own lag
  gauge is not used) and the latency from `captured_at` to readable.
- sweep: one backlog, drained once per (max_batch_frames, max_inflight_batches) setting by a
  fresh consumer group, each writing to its own output topic.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Message

from bench.cpu import meter
from bench.frames import BenchFrame
from bench.pipeline import BenchError, cpu_figures
from bench.report import latency_ms, rate
from bench.side_reader import SideReader
from stream_worker.contracts.topics import FRAMES, FRAMES_DLQ, PLATES
from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.service_child import ServiceChild, ServiceStartError
from stream_worker.tools.produce import produce_frames
from stream_worker.worker.metrics import read_frames_in

REPO_ROOT = Path(__file__).resolve().parent.parent
SESSION_TIMEOUT_MS = 6000  # a group join takes about half of it on Tansu
WORKER_READY_TIMEOUT_S = 120.0
WORKER_STOP_TIMEOUT_S = 60.0
STALL_TIMEOUT_S = 180.0  # no new output for this long while frames are missing: the run failed
# No new output for this long, and every frame the worker received has its output: the rest were
# never delivered to it by the broker (see OutputCollector.wait_for).
UNDELIVERED_SETTLE_S = 15.0
LAG_SAMPLE_S = 0.5
MIB = 1024 * 1024


class WorkerProcess(ServiceChild):
    """`python -m stream_worker run` as a child process with the benchmark's topics and settings."""

    def __init__(
        self,
        bootstrap_servers: str,
        triton_url: str,
        group_id: str,
        topics: Topics,
        settings: dict[str, int],
        log_dir: Path,
        on_started: Callable[[int], None] = lambda pgid: None,
    ) -> None:
        self._on_started = on_started
        args = [
            f"--bootstrap-servers={bootstrap_servers}",
            f"--triton-url={triton_url}",
            f"--group-id={group_id}",
            f"--input-topic={topics.frames}",
            f"--output-topic={topics.plates}",
            f"--dlq-topic={topics.dead_letters}",
            f"--session-timeout-ms={SESSION_TIMEOUT_MS}",
            "--local-broker",  # the stream bench always runs on the embedded broker
            "--metrics-host=127.0.0.1",
            "--log-level=WARNING",
            *(f"--{name.replace('_', '-')}={value}" for name, value in settings.items()),
        ]
        log_path = log_dir / f"worker-{group_id}.log"
        super().__init__("run", args, log_path, metrics_port=free_port(), append_log=True, cwd=REPO_ROOT)

    def start(self) -> WorkerProcess:
        """Start and wait until /readyz answers 200 (partitions assigned, Triton ready)."""
        super().start()
        self._on_started(self.pid)  # its own session: its pid is its process group
        try:
            self.wait_ready(WORKER_READY_TIMEOUT_S, poll_s=0.1)
        except ServiceStartError as error:
            if error.exit_code is not None:
                raise BenchError(f"the worker exited during start-up: {self.log_tail()}") from error
            self.stop()
            raise BenchError(
                f"the worker was not ready within {WORKER_READY_TIMEOUT_S:.0f} s: {self.log_tail()}"
            ) from error
        return self

    def _status_bytes(self, field: str) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise BenchError(f"no {field} in /proc/{self.pid}/status")

    def peak_rss_bytes(self) -> int:
        """VmHWM: the process's peak resident set size so far."""
        return self._status_bytes("VmHWM")

    def rss_bytes(self) -> int:
        return self._status_bytes("VmRSS")

    def stop(self) -> int | None:  # type: ignore[override]
        """SIGTERM (the worker drains and commits), then SIGKILL; the exit code."""
        return super().stop(timeout_s=WORKER_STOP_TIMEOUT_S)

    def frames_in(self) -> int | None:
        """Frames the worker has received from the broker (its own counter), None if unreadable."""
        return read_frames_in(f"http://127.0.0.1:{self.metrics_port}/metrics")


class RssSampler:
    """The worker's RSS once a second next to the frames out so far: shows whether it plateaus."""

    def __init__(self, worker: WorkerProcess, collector: OutputCollector, max_points: int = 40) -> None:
        self.samples: list[tuple[float, int, float]] = []  # seconds, records out, RSS MiB
        self._worker = worker
        self._collector = collector
        self._max_points = max_points
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(1.0):
            try:
                rss = self._worker.rss_bytes()
            except (OSError, BenchError):
                return  # the worker has exited
            self.samples.append(
                (round(time.monotonic() - started, 1), self._collector.count(), round(rss / MIB, 1))
            )

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def points(self) -> list[tuple[float, int, float]]:
        """At most `max_points` samples, evenly spread, the last one always included."""
        step = max(1, -(-len(self.samples) // self._max_points))
        picked = self.samples[::step]
        if self.samples and picked[-1] != self.samples[-1]:
            picked.append(self.samples[-1])
        return picked


@dataclass(frozen=True)
class Topics:
    frames: str
    plates: str
    dead_letters: str

    @classmethod
    def named(cls, prefix: str) -> Topics:
        return cls(*(f"{prefix}.{topic.name}" for topic in (FRAMES, PLATES, FRAMES_DLQ)))


@dataclass(frozen=True)
class Received:
    readable_at: float  # time.time() when the benchmark's consumer got it
    topic: str
    value: bytes


class OutputCollector:
    """Reads the output and dead-letter topics from the beginning, from the side (no group offsets)."""

    def __init__(self, bootstrap_servers: str, topics: Sequence[str]) -> None:
        self.received: list[Received] = []
        self._reader = SideReader(bootstrap_servers, topics, self._keep, name="bench-output")

    def start(self) -> OutputCollector:
        self._reader.start()
        return self

    def _keep(self, message: Message, arrived: float) -> None:
        self.received.append(Received(arrived, message.topic(), message.value() or b""))

    def count(self) -> int:
        return len(self.received)

    def wait_for(self, count: int, worker: WorkerProcess) -> int:
        """Until `count` records are readable; returns how many frames the broker never delivered.

        The local Tansu broker now and then skips a record on a live fetch: the record is there
        when the topic is read again from the start, and an independent consumer misses records
        the same way (measured: 1 or 2 of 240 frames in 3 of 12 live runs). A frame the worker
        never received cannot have an output, so once the output has settled at exactly the
        worker's own count of frames received, the rest are counted instead of waited for. A
        received frame without its output, a dead worker or stalled output still fail the run.
        """
        seen, last_progress, last_asked = self.count(), time.monotonic(), 0.0
        while (now_seen := self.count()) < count:
            now = time.monotonic()
            if now_seen != seen:
                seen, last_progress = now_seen, now
            if not worker.is_running():
                raise BenchError(f"the worker exited with {now_seen} of {count} records out")
            if now - last_progress > UNDELIVERED_SETTLE_S and now - last_asked > 1.0:
                last_asked = now
                if worker.frames_in() == now_seen:
                    return count - now_seen
            if now - last_progress > STALL_TIMEOUT_S:
                raise BenchError(
                    f"no output for {STALL_TIMEOUT_S:.0f} s with {now_seen} of {count} records out"
                )
            time.sleep(0.05)
        return 0

    def stop(self) -> None:
        self._reader.stop()


@dataclass
class Drained:
    """What a finished run left on the output topics."""

    events: list[dict[str, Any]]
    readable_at: list[float]
    dead_letters: int


def split(received: Sequence[Received], plates_topic: str) -> Drained:
    events, readable_at, dead_letters = [], [], 0
    for record in received:
        if record.topic == plates_topic:
            events.append(orjson.loads(record.value))
            readable_at.append(record.readable_at)
        else:
            dead_letters += 1
    return Drained(events, readable_at, dead_letters)


def _stop_and_split(
    worker: WorkerProcess, collector: OutputCollector, topics: Topics
) -> tuple[int | None, Drained]:
    """Stop the worker, then the reader; a run whose frames were dead-lettered measured nothing."""
    try:
        exit_code = worker.stop()
    finally:
        collector.stop()
    drained = split(collector.received, topics.plates)
    if drained.dead_letters:
        raise BenchError(f"{drained.dead_letters} frames were dead-lettered: {worker.log_tail()}")
    return exit_code, drained


def _timestamp(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


class Tally:
    """A count shared between threads (frames handed to the producers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def numbered(
    frames: Sequence[BenchFrame], count: int, prefix: str, tally: Tally | None = None, start: int = 0
) -> Iterator[tuple[str, bytes]]:
    """`(frame_id, jpeg)` pairs for produce_frames, cycling through `frames` from `start`;
    `tally` counts the frames handed over."""
    for index in range(count):
        if tally is not None:
            tally.add()
        yield f"{prefix}-{index}", frames[(start + index) % len(frames)].jpeg


def publish_backlog(
    bootstrap_servers: str, topic: str, frames: Sequence[BenchFrame], count: int, cameras: int
) -> float:
    """`count` frames spread over `cameras` keys, as fast as the broker takes them; seconds taken.

    Camera after camera, each with its slice of the run's frame sequence, so that the backlog
    holds the same mix of frames as any other run of `count` frames.
    """
    started = time.monotonic()
    per_camera = [count // cameras + (1 if i < count % cameras else 0) for i in range(cameras)]
    offsets = [sum(per_camera[:camera]) for camera in range(cameras)]
    for camera, share in enumerate(per_camera):
        if share == 0:
            continue
        report = produce_frames(
            numbered(frames, share, f"cam{camera}", start=offsets[camera]),
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            camera_id=f"cam{camera}",
            local_broker=True,
        )
        if report.failed:
            raise BenchError(f"publishing the backlog failed: {report.first_error}")
    return time.monotonic() - started


class StreamBench:
    """The broker, the Triton URL and a scratch folder for worker logs, shared by the runs."""

    def __init__(
        self,
        bootstrap_servers: str,
        triton_url: str,
        partitions: int,
        server_groups: dict[str, int] | None = None,
        on_worker_started: Callable[[int], None] = lambda pgid: None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.triton_url = triton_url
        self.partitions = partitions
        # Process groups of the servers ({"triton": pgid, "broker": pgid}), for their CPU time.
        self.server_groups = dict(server_groups or {})
        self.on_worker_started = on_worker_started  # gets each worker's process group
        self.log_dir = Path(tempfile.mkdtemp(prefix="stream-worker-bench-"))
        self.run_id = uuid.uuid4().hex[:8]
        self._backlogs = 0

    def close(self) -> None:
        """Remove the worker logs (a failure's BenchError already carries the log's tail)."""
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def topics(self, name: str, frames_topic: str | None = None) -> Topics:
        """Fresh output and dead-letter topics (and a fresh frames topic unless one is given)."""
        topics = Topics.named(f"bench-{self.run_id}-{name}")
        if frames_topic is not None:
            topics = Topics(frames_topic, topics.plates, topics.dead_letters)
        create_topics(
            self.bootstrap_servers, [topics.frames, topics.plates, topics.dead_letters], self.partitions
        )
        return topics

    def worker(self, name: str, topics: Topics, settings: dict[str, int]) -> WorkerProcess:
        group = f"bench-{self.run_id}-{name}"
        return WorkerProcess(
            self.bootstrap_servers,
            self.triton_url,
            group,
            topics,
            settings,
            self.log_dir,
            self.on_worker_started,
        )

    def publish_backlog(self, frames: Sequence[BenchFrame], count: int, cameras: int) -> tuple[str, float]:
        """A fresh frames topic holding `count` frames; its name and the seconds publishing took."""
        self._backlogs += 1
        topic = self.topics(f"backlog{self._backlogs}").frames
        return topic, publish_backlog(self.bootstrap_servers, topic, frames, count, cameras)

    def drain(self, frames_topic: str, count: int, name: str, settings: dict[str, int]) -> dict[str, Any]:
        """A fresh group drains the `count` frames already on `frames_topic`."""
        topics = self.topics(name, frames_topic)
        collector = OutputCollector(self.bootstrap_servers, [topics.plates, topics.dead_letters]).start()
        worker = self.worker(name, topics, settings)
        try:
            worker.start()
            meters = {"worker": meter(processes=[worker.pid], this_process=False)}
            meters.update(
                {name: meter(groups=[pgid], this_process=False) for name, pgid in self.server_groups.items()}
            )
            cpu_before = {name: read() for name, read in meters.items()}
            with RssSampler(worker, collector) as rss:
                undelivered = collector.wait_for(count, worker)
            cpu_by_process = {name: read() - cpu_before[name] for name, read in meters.items()}
            peak_rss = worker.peak_rss_bytes()
        finally:
            exit_code, drained = _stop_and_split(worker, collector, topics)
        first_consumed = min(_timestamp(e["processed_at"]) - e["latency_ms"] / 1000 for e in drained.events)
        seconds = max(drained.readable_at) - first_consumed
        return {
            "settings": settings,
            "frames": len(drained.events),
            "frames_not_delivered_by_broker": undelivered,
            "seconds": round(seconds, 3),
            "frames_per_s": rate(len(drained.events), seconds),
            "worker_peak_rss_mib": round(peak_rss / MIB, 1),
            "worker_rss_samples": {"columns": ["seconds", "events_out", "rss_mib"], "rows": rss.points()},
            "worker_exit_code": exit_code,
            "frames_with_plates": sum(1 for e in drained.events if e["plates"]),
            "frames_not_examined": sum(1 for e in drained.events if e.get("examined") is False),
            "latency": "worker: consumed -> event built",
            **latency_ms([e["latency_ms"] / 1000 for e in drained.events]),
            "cpu_counted": " + ".join(cpu_by_process),
            **cpu_figures(sum(cpu_by_process.values()), len(drained.events)),
            "cpu_ms_per_frame_by_process": {
                name: round(seconds * 1000 / len(drained.events), 1)
                for name, seconds in cpu_by_process.items()
            },
        }

    def live(
        self, frames: Sequence[BenchFrame], cameras: int, fps: float, seconds: float, settings: dict[str, int]
    ) -> dict[str, Any]:
        """`cameras` publishing `fps` each for `seconds`: rate kept, lag, captured_at -> readable."""
        topics = self.topics("live")
        per_camera = max(1, round(fps * seconds))
        total = per_camera * cameras
        collector = OutputCollector(self.bootstrap_servers, [topics.plates, topics.dead_letters]).start()
        worker = self.worker("live", topics, settings)
        published = Tally()
        camera_errors: list[str] = []
        lag_samples: list[int] = []
        try:
            worker.start()
            started = time.time()
            cameras_threads = [
                threading.Thread(
                    target=self._camera,
                    args=(topics.frames, frames, per_camera, f"cam{camera}", fps, published, camera_errors),
                    daemon=True,
                )
                for camera in range(cameras)
            ]
            for thread in cameras_threads:
                thread.start()
            while any(thread.is_alive() for thread in cameras_threads):
                lag_samples.append(max(0, published.value - collector.count()))
                time.sleep(LAG_SAMPLE_S)
            publishing_ended = time.time()
            if camera_errors:
                raise BenchError(f"publishing failed: {camera_errors[0]}")
            during_load = collector.count()
            undelivered = collector.wait_for(total, worker)
            peak_rss = worker.peak_rss_bytes()
        finally:
            exit_code, drained = _stop_and_split(worker, collector, topics)
        latencies = [
            readable - _timestamp(event["captured_at"])
            for event, readable in zip(drained.events, drained.readable_at, strict=True)
        ]
        load_seconds = publishing_ended - started
        return {
            "settings": settings,
            "cameras": cameras,
            "fps_per_camera": fps,
            "offered_fps": round(cameras * fps, 3),
            "publishing_seconds": round(load_seconds, 3),
            "frames": len(drained.events),
            "frames_not_delivered_by_broker": undelivered,
            "achieved_fps": rate(during_load, load_seconds),
            "drained_after_publishing_s": round(max(drained.readable_at) - publishing_ended, 3),
            "max_lag_frames": max(lag_samples, default=0),
            "mean_lag_frames": round(sum(lag_samples) / len(lag_samples), 1) if lag_samples else 0.0,
            "worker_peak_rss_mib": round(peak_rss / MIB, 1),
            "worker_exit_code": exit_code,
            "latency": "captured_at header -> event readable on the output topic",
            **latency_ms(latencies),
        }

    def _camera(
        self,
        topic: str,
        frames: Sequence[BenchFrame],
        count: int,
        camera: str,
        fps: float,
        published: Tally,
        errors: list[str],
    ) -> None:
        report = produce_frames(
            numbered(frames, count, camera, published),
            bootstrap_servers=self.bootstrap_servers,
            topic=topic,
            camera_id=camera,
            fps=fps,
        )
        if report.failed:
            errors.append(f"camera {camera}: {report.first_error}")
