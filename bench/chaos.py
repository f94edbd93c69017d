"""`stream-worker bench chaos`: many faults in one long run, checked by an independent consumer.

Cameras publish valid frames with hostile ones interleaved (bench/hostile.py) to the local broker;
workers (`python -m stream_worker run`, as in production) read them in one consumer group and call
the local Triton. Meanwhile, at random moments (random fractions of the frames answered), a worker
is killed with SIGKILL and started again, and Triton is killed with SIGKILL and started again (the
shared memory and stubs a killed Triton leaves are cleaned up by LocalTriton's start). A consumer
of its own reads the output and dead-letter topics from the side, and bench/chaos_check.py holds
the outcome of every frame the broker acknowledged against what its kind must produce.

Not part of CI: at full size (10,000 valid and 1,000 hostile frames) it lasts as long as 11,000
frames take, about 25 minutes on 2 cores to itself (the detector costs ~160 CPU ms per frame);
tests/bench/test_chaos.py runs a tiny one. Exit code 0 only when every invariant holds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench import environment
from bench.chaos_check import Output, Published, check, duplicate_bound, next_event_after
from bench.frames import CAR_OFFSETS, CROP, samples_dir
from bench.hostile import KINDS_BY_NAME, Kind, Material, Record, pick_kinds
from bench.report import format_table, write_json
from stream_worker.contracts import DeadLetterHeader, FrameHeader

REPO_ROOT = Path(__file__).resolve().parent.parent
MIB = 2**20
PROGRESS_EVERY_S = 15.0
SAMPLE_EVERY_S = 1.0
TRAILING_DUPLICATES_WAIT_S = 3.0  # after the last frame's output, before the workers stop
KILL_WINDOW = (0.03, 0.8)  # faults strike between these fractions of the run (see ChaosRun._drive)
TRITON_START_TIMEOUT_S = 600.0
TRITON_EXIT_WAIT_S = 30.0
WORKER_START_WAIT_S = 400.0  # 3 attempts of bench.stream's ready timeout, and some
# Lines of Triton's log that tell of a backend stub failing (a crash caused by input would).
STUB_LOG_PATTERNS = ("not healthy", "Stub process", "Segmentation fault", "core dumped", "terminate called")


def parser() -> argparse.ArgumentParser:
    from stream_worker.config import WorkerSettings

    defaults = WorkerSettings()
    p = argparse.ArgumentParser(
        prog="stream-worker bench chaos",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: stream-worker bench chaos --report reports/chaos.json | tiny: --frames 40 "
        "--hostile 23 --worker-kills 1 --triton-kills 1 --cameras 4 --partitions 2",
    )
    p.add_argument("--frames", type=int, default=10_000, help="Valid frames.")
    p.add_argument("--hostile", type=int, default=1_000, help="Hostile frames, interleaved at random.")
    p.add_argument(
        "--hostile-kinds", default="", help="Comma-separated kinds (default: all of bench/hostile.py)."
    )
    p.add_argument("--cameras", type=int, default=12)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-kills", type=int, default=20, help="SIGKILLs of a worker (each restarted).")
    p.add_argument("--triton-kills", type=int, default=3, help="SIGKILLs of Triton (each restarted).")
    p.add_argument(
        "--fps",
        type=float,
        default=0.0,
        help="Frames per second offered, all cameras together; 0: as fast as the broker takes them "
        "(a backlog: the run lasts as long as the pipeline needs).",
    )
    p.add_argument("--frame-size", default="640x360", help="WIDTHxHEIGHT of the valid frames.")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--time-limit-s", type=float, default=3600.0, help="The run stops here, whatever is missing."
    )
    p.add_argument(
        "--settle-s",
        type=float,
        default=120.0,
        help="Everything published and no new output for this long: the rest is missing.",
    )
    p.add_argument("--batch", type=int, default=defaults.max_batch_frames, help="Workers' max_batch_frames.")
    p.add_argument(
        "--inflight", type=int, default=defaults.max_inflight_batches, help="Workers' max_inflight_batches."
    )
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--model-config-name", default=None, help="Each model's configs/NAME.pbtxt (e.g. gpu).")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument(
        "--logs", type=Path, default=None, help="Keep the workers' and Triton's logs in this folder."
    )
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


# --- the frames ----------------------------------------------------------------------------


def valid_frames(samples: Path, width: int, height: int) -> list[bytes]:
    """Camera-like JPEGs made from the sample photos at run time (they may not be committed):
    crops of the street photo at several offsets (with a plate) and the cat photo, mirrored too."""
    car = cv2.imread(str(samples / "car.jpg"), cv2.IMREAD_COLOR)
    cat = cv2.imread(str(samples / "cat.jpeg"), cv2.IMREAD_COLOR)
    if car is None or cat is None:
        raise FileNotFoundError(f"the sample photos car.jpg and cat.jpeg are missing from {samples}")
    images = []
    for left, top in CAR_OFFSETS:
        rows, columns = car.shape[:2]
        x, y = round(left * columns), round(top * rows)
        images.append(car[y : y + round(CROP * rows), x : x + round(CROP * columns)])
    images += [cat, cat[:, ::-1]]
    frames = []
    for image in images:
        resized = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
        ok, buffer = cv2.imencode(".jpg", resized, [cv2.IMWRITE_JPEG_QUALITY, 85])
        if not ok:
            raise RuntimeError("OpenCV could not encode a frame")
        frames.append(buffer.tobytes())
    return frames


@dataclass
class Planned:
    """A frame to publish: its kind, camera and record."""

    index: int
    kind: Kind | None  # None: valid
    camera: int
    record: Record

    @property
    def kind_name(self) -> str:
        return "valid" if self.kind is None else self.kind.name

    @property
    def expected_reason(self) -> str | None:
        if self.kind is None or self.kind.expected.reason is None:
            return None
        return self.kind.expected.reason.value


def plan_frames(
    valid: Sequence[bytes], count: int, hostile: Sequence[Kind], cameras: int, rng: random.Random
) -> list[Planned]:
    """`count` valid frames in camera turn, the hostile ones at random places between them."""
    material = Material(valid)
    kinds: list[Kind | None] = [None] * count + list(hostile)
    rng.shuffle(kinds)
    plan = []
    for index, kind in enumerate(kinds):
        if kind is None:
            plan.append(Planned(index, None, index % cameras, Record(valid[index % len(valid)])))
        else:
            plan.append(Planned(index, kind, rng.randrange(cameras), kind.make(rng, material)))
    return plan


def camera_name(camera: int) -> str:
    return f"cam{camera:02d}"


def record_parts(frame: Planned) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """Key and headers as published: the camera's own unless the hostile kind sets them."""
    camera = camera_name(frame.camera).encode()
    key = camera if frame.record.key == b"" else frame.record.key
    if frame.record.headers is not None:
        return key, list(frame.record.headers)
    captured_at = datetime.now(UTC).isoformat(timespec="milliseconds").encode()
    return key, [
        (FrameHeader.CAMERA_ID.value, camera),
        (FrameHeader.FRAME_ID.value, f"chaos-{frame.index}".encode()),
        (FrameHeader.CAPTURED_AT.value, captured_at),
    ]


def expectation(frame: Planned, source: tuple[int, int]) -> Published:
    """What the checker holds the frame's output against."""
    key, headers = record_parts(frame)
    named = dict(headers)
    camera = named.get(FrameHeader.CAMERA_ID.value) or key
    frame_id = named.get(FrameHeader.FRAME_ID.value)
    return Published(
        frame.index,
        frame.kind_name,
        frame.expected_reason,
        source,
        camera.decode(errors="replace") if camera else None,
        frame_id.decode(errors="replace") if frame_id else None,
    )


# --- publishing and reading ----------------------------------------------------------------


class Publisher(threading.Thread):
    """Publishes the plan in order at `fps` (0: as fast as the broker takes it), each camera to its
    partition; records where the broker stored each frame."""

    def __init__(
        self, bootstrap: str, topic: str, plan: Sequence[Planned], partitions: int, fps: float
    ) -> None:
        super().__init__(name="chaos-publisher", daemon=True)
        self.sources: dict[int, tuple[int, int]] = {}
        self.errors: list[str] = []
        self.published = 0
        self.finished = threading.Event()
        self._servers, self._topic, self._plan = bootstrap, topic, plan
        self._partitions, self._fps = partitions, fps
        self._stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        from stream_worker.tools.produce import producer_config

        extra = {"message.max.bytes": str(8 * MIB)}
        producer = Producer(
            producer_config(self._servers, extra, local_broker=True)
        )  # chaos: the local broker
        started = time.monotonic()
        try:
            for position, frame in enumerate(self._plan):
                if self._stopping.is_set():
                    return
                if self._fps > 0:
                    self._stopping.wait(max(0.0, started + position / self._fps - time.monotonic()))
                key, headers = record_parts(frame)
                while True:
                    try:
                        producer.produce(
                            self._topic,
                            value=frame.record.value,
                            key=key,
                            headers=headers,
                            partition=frame.camera % self._partitions,
                            on_delivery=self._delivered(frame.index),
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                self.published += 1
                producer.poll(0)
            if left := producer.flush(60):
                self.errors.append(f"{left} frames not acknowledged within 60 s")
        finally:
            self.finished.set()

    def _delivered(self, index: int) -> Callable[[Any, Any], None]:
        def callback(error: Any, message: Any) -> None:
            if error is not None:
                self.errors.append(f"frame {index}: {error}")
            else:
                self.sources[index] = (message.partition(), message.offset())

        return callback

    def stop(self) -> None:
        self._stopping.set()
        self.join(90)


def parse_output(topic: str, plates_topic: str, value: bytes | None, headers: list, arrived: float) -> Output:
    """An output record as the checker sees it; a record that does not say its source gets None."""
    import orjson

    if topic == plates_topic:
        try:
            event = orjson.loads(value or b"")
            source = (int(event["source"]["partition"]), int(event["source"]["offset"]))
        except (ValueError, KeyError, TypeError):
            return Output(arrived, False, None)
        return Output(
            arrived,
            False,
            source,
            event_id=event.get("event_id"),
            camera_id=event.get("camera_id"),
            frame_id=event.get("frame_id"),
            plates=len(event.get("plates") or []),
        )
    named = {name: (raw or b"").decode("utf-8", "replace") for name, raw in headers or []}
    try:
        source = (int(named[DeadLetterHeader.SOURCE_PARTITION]), int(named[DeadLetterHeader.SOURCE_OFFSET]))
    except (KeyError, ValueError):
        source = None
    return Output(
        arrived,
        True,
        source,
        reason=named.get(DeadLetterHeader.REASON),
        stage=named.get(DeadLetterHeader.STAGE),
        detail=named.get(DeadLetterHeader.DETAIL),
    )


class Collector(threading.Thread):
    """The independent consumer: reads the output and dead-letter topics from the beginning, with
    no group offsets, and keeps what the checker needs of each record."""

    def __init__(self, bootstrap: str, plates_topic: str, dlq_topic: str) -> None:
        super().__init__(name="chaos-collector", daemon=True)
        self.outputs: list[Output] = []
        self.sources: set[tuple[int, int]] = set()
        self.triton_answers: list[float] = []  # arrivals of events and of Triton's dead letters
        self.event_arrivals: list[float] = []
        self.error: BaseException | None = None
        self._servers, self._plates, self._dlq = bootstrap, plates_topic, dlq_topic
        self._stopping = threading.Event()
        self._assigned = threading.Event()

    def begin(self) -> Collector:
        self.start()
        if not self._assigned.wait(60) or self.error:
            raise RuntimeError(f"cannot read the output topics: {self.error}")
        return self

    def run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": self._servers,
                    "group.id": f"chaos-reader-{uuid.uuid4().hex}",
                    "enable.auto.commit": False,
                    "fetch.wait.max.ms": 100,
                }
            )
            topics = consumer.list_topics(timeout=30).topics
            consumer.assign(
                [
                    TopicPartition(topic, partition, OFFSET_BEGINNING)
                    for topic in (self._plates, self._dlq)
                    for partition in topics[topic].partitions
                ]
            )
        except Exception as error:
            self.error = error
            self._assigned.set()
            return
        self._assigned.set()
        try:
            while not self._stopping.is_set():
                first = consumer.poll(0.2)
                if first is None:
                    continue
                arrived = time.time()
                for message in [first, *consumer.consume(500, 0)]:
                    if message.error() is not None:
                        continue
                    output = parse_output(
                        message.topic(), self._plates, message.value(), message.headers() or [], arrived
                    )
                    self.outputs.append(output)
                    if output.source is not None:
                        self.sources.add(output.source)
                    if not output.dead_letter or output.stage != "validate":
                        self.triton_answers.append(arrived)
                    if not output.dead_letter:
                        self.event_arrivals.append(arrived)
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


# --- process figures -----------------------------------------------------------------------


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
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


# --- the run -------------------------------------------------------------------------------


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


class ChaosRun:
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
        self._watch: Callable[[int], None] = lambda pgid: None  # the watchdog's, once it runs

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def run(self) -> dict[str, Any]:
        from bench.stream import Topics, WorkerProcess
        from stream_worker.children import Watchdog
        from stream_worker.launchers.broker import LocalBroker, create_topics
        from stream_worker.launchers.triton import LocalTriton

        args = self.args
        watchdog = Watchdog()
        self._watch = watchdog.watch
        with contextlib.ExitStack() as stack:
            stack.callback(shutil.rmtree, self.log_dir, ignore_errors=True)
            stack.callback(watchdog.release)
            print(f"[{self.elapsed()} s] starting Triton and the broker", flush=True)
            self.triton = LocalTriton(args.repository, model_config_name=args.model_config_name)
            stack.callback(self.triton.close)
            self._start_triton()
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
                self._restart_worker(number)
            self._wait_for_restarts()
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
            self._wait_for_restarts()
            time.sleep(TRAILING_DUPLICATES_WAIT_S)
            self.sampler.sample()
            self.worker_exit_codes = [worker.stop() for worker in self.workers]
            self.publisher.stop()
            self.collector.stop()
            self.sampler.stop()
            self.triton_log_lines = self._triton_log_findings()
            if args.logs:
                args.logs.mkdir(parents=True, exist_ok=True)
                for log in [*self.log_dir.glob("*.log"), self.triton.log_path]:
                    with contextlib.suppress(OSError):
                        shutil.copy2(log, args.logs / log.name)
            self.worker_log_findings = self._worker_log_findings()
            return self._results(topics)

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
            self._restart_crashed()
            done = self.publisher.published if self.args.fps > 0 else answered
            for action in schedule.due(done / max(1, len(self.plan))):
                if action == "triton":
                    self._kill_triton()
                elif not self._kill_worker():
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

    def _restart_crashed(self) -> None:
        """A process that died without being killed here is a crash: recorded, then restarted."""
        if not self.triton.is_running():
            self.crashes.append(
                {"process": "triton", "at_s": self.elapsed(), "log_tail": self.triton.log_tail(20)}
            )
            print(f"[{self.elapsed()} s] CRASH: Triton exited on its own; restarting", flush=True)
            self._start_triton()
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
                self._restart_worker(number)

    def _restart_worker(self, number: int, record: dict[str, Any] | None = None) -> None:
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

    def _wait_for_restarts(self) -> None:
        for thread in list(self.restarting.values()):
            thread.join(WORKER_START_WAIT_S)

    def _kill_worker(self) -> bool:
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
        self._restart_worker(number, record)
        return True

    def _start_triton(self) -> tuple[float, int]:
        started = time.monotonic()
        self.triton.start(timeout_s=TRITON_START_TIMEOUT_S)
        assert self.triton.pid is not None
        self._watch(self.triton.pid)
        return time.monotonic() - started, len(self.triton.removed_shm_regions)

    def _kill_triton(self) -> None:
        self.sampler.sample()
        pid = self.triton.pid
        assert pid is not None
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + TRITON_EXIT_WAIT_S
        while self.triton.is_running() and time.monotonic() < deadline:
            time.sleep(0.05)
        orphans = len([member for member in group_members(pid) if member != pid])
        start_s, removed = self._start_triton()
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

    def _triton_log_findings(self) -> list[str]:
        try:
            lines = self.triton.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line[:300] for line in lines if any(pattern in line for pattern in STUB_LOG_PATTERNS)]

    def _worker_log_findings(self) -> dict[str, int]:
        counts = {"Triton unavailable, retrying": 0, "Triton rejected a batch": 0, "Traceback": 0}
        for worker in self.workers:
            with contextlib.suppress(OSError):
                text = worker.log_path.read_text(errors="replace")
                for pattern in counts:
                    counts[pattern] += text.count(pattern)
        return counts

    def _results(self, topics: Any) -> dict[str, Any]:
        published = [
            expectation(frame, self.publisher.sources[frame.index])
            for frame in self.plan
            if frame.index in self.publisher.sources
        ]
        kills = len(self.worker_kills) + sum(1 for crash in self.crashes if crash["process"] != "triton")
        bound = duplicate_bound(kills, self.args.inflight, self.args.batch)
        verdict = check(topics.frames, published, self.collector.outputs, bound)
        answers, events = sorted(self.collector.triton_answers), sorted(self.collector.event_arrivals)
        for kill in self.triton_kills:
            # From the moment Triton was ready again: to the first output it had to answer (an
            # event, or a dead letter of its decode), and to the first event.
            kill["ready_to_next_answer_s"] = next_event_after(answers, kill["ready_at"])
            kill["ready_to_next_event_s"] = next_event_after(events, kill["ready_at"])
            after_ready = kill["ready_to_next_event_s"]
            kill["kill_to_next_event_s"] = (
                None if after_ready is None else round(kill["ready_at"] - kill["killed_at"] + after_ready, 3)
            )
        input_crashes = [crash for crash in self.crashes if crash["process"] == "triton"]
        stub_trouble = self.triton_log_lines
        invariants = {
            "frames the broker did not acknowledge": len(self.plan) - len(published),
            "valid frames without an event": verdict["failures"]["valid_without_event"],
            "valid frames with a dead letter instead": verdict["failures"]["valid_with_dead_letter"],
            "hostile frames without a dead letter": verdict["failures"]["hostile_without_dead_letter"],
            "hostile frames with an event instead": verdict["failures"]["hostile_with_event"],
            "dead letters with a wrong or no reason": verdict["failures"]["dead_letter_with_wrong_reason"],
            "frames with two different outcomes": verdict["failures"]["several_outcomes"],
            "events not matching their frame": verdict["failures"]["event_not_matching_its_frame"],
            "outputs of no published frame": verdict["failures"]["output_of_no_published_frame"],
            "duplicates within the bound": verdict["duplicates"]["within_bound"],
            "Triton crashes not caused here": len(input_crashes),
            "Triton stub failures in its log": len(stub_trouble),
            "worker crashes not caused here": len(self.crashes) - len(input_crashes),
            "every fault struck": len(self.worker_kills) == self.args.worker_kills
            and len(self.triton_kills) == self.args.triton_kills,
        }
        ok = all(value is True or value == 0 for value in invariants.values())
        return {
            "ok": ok and self.complete,
            "complete": self.complete,
            "stopped_because": self.stopped_because,
            "seconds": self.elapsed(),
            "invariants": invariants,
            "check": verdict,
            "worker_kills": self.worker_kills,
            "triton_kills": self.triton_kills,
            "crashes": self.crashes,
            "memory": {
                "triton_server_peak_rss_mib": round(self.sampler.triton_server_peak_kib / 1024, 1),
                "triton_with_stubs_peak_rss_mib": round(self.sampler.triton_group_peak_kib / 1024, 1),
                "worker_peak_rss_mib": round(self.sampler.worker_peak_kib / 1024, 1),
            },
            "initial_stale_shm_regions_removed": self.initial_shm_regions_removed,
            "triton_log_findings": self.triton_log_lines[:50],
            "worker_log_findings": self.worker_log_findings,
            "worker_exit_codes": self.worker_exit_codes,
        }


# --- the command ---------------------------------------------------------------------------


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"error: --frame-size {text!r} is not WIDTHxHEIGHT") from None
    return width, height


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    for name in ("cameras", "partitions", "workers", "batch", "inflight"):
        if getattr(args, name) < 1:
            print(f"error: --{name} must be at least 1", file=sys.stderr)
            return 2
    names = [name for name in args.hostile_kinds.split(",") if name]
    if unknown := [name for name in names if name not in KINDS_BY_NAME]:
        print(f"error: unknown hostile kinds {unknown}; known: {', '.join(KINDS_BY_NAME)}", file=sys.stderr)
        return 2
    started = datetime.now(UTC)
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    versions = environment.versions(None)  # now: the commit the run starts from, not the one it ends at
    rng = random.Random(args.seed)
    frames = valid_frames(samples_dir(), *_size(args.frame_size))
    print(f"making {args.hostile} hostile frames", flush=True)
    plan = plan_frames(frames, args.frames, pick_kinds(args.hostile, names or None), args.cameras, rng)
    from stream_worker.launchers.triton import TritonLaunchError

    run = ChaosRun(args, plan)
    try:
        results = run.run()
    except TritonLaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = {
        "scenario": "chaos",
        "command": "stream-worker bench chaos " + " ".join(argv),
        "started_at": started.isoformat(timespec="seconds"),
        "machine": environment.machine(),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "load_threshold": environment.IDLE_LOAD,
        "busy": busy,
        "versions": versions,
        "settings": {
            key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()
        },
        "input": {
            "valid_frame_bytes": [len(frame) for frame in frames],
            "hostile_kinds": {
                kind.name: str(kind.expected) for kind in (KINDS_BY_NAME[n] for n in (names or KINDS_BY_NAME))
            },
        },
        **results,
    }
    print(render(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0 if report["ok"] else 1


def render(report: dict[str, Any]) -> str:
    """The tables printed at the end (also Markdown)."""
    verdict = report["check"]
    parts = [
        f"\nchaos: {report['seconds']} s, {report['stopped_because']}; machine: "
        f"{report['machine']['cpu_model']}, {report['machine']['usable_cores']} cores; load average "
        f"before/after {report['load_average']['before']} / {report['load_average']['after']}"
        + (" - BUSY (figures inflated)" if report["busy"] else "")
    ]
    kind_columns = ["kind", "frames", "ok", "missing", "wrong", "event"]
    reasons = sorted({key for row in verdict["by_kind"] for key in row if key.startswith("dead_letter:")})
    rows = [{**row, **{key.split(":", 1)[1]: row.get(key) for key in reasons}} for row in verdict["by_kind"]]
    expected = report["input"]["hostile_kinds"]
    for row in rows:
        row["expected"] = "event" if row["kind"] == "valid" else expected.get(row["kind"], "?")
    parts.append(
        "\noutcome per kind (frames counted once; duplicates below):\n"
        + format_table(
            rows, [*kind_columns[:2], "expected", *kind_columns[2:], *(r.split(":", 1)[1] for r in reasons)]
        )
    )
    memory = report["memory"]
    duplicates = verdict["duplicates"]
    summary = {
        "frames": verdict["frames"]["published"],
        "valid": verdict["frames"]["valid"],
        "hostile": verdict["frames"]["hostile"],
        "worker_kills": len(report["worker_kills"]),
        "triton_kills": len(report["triton_kills"]),
        "duplicates": duplicates["total"],
        "duplicate_bound": duplicates["bound"],
        "triton_peak_rss_mib": memory["triton_server_peak_rss_mib"],
        "triton_stubs_peak_rss_mib": memory["triton_with_stubs_peak_rss_mib"],
        "worker_peak_rss_mib": memory["worker_peak_rss_mib"],
    }
    parts.append("\nrun:\n" + format_table([summary], list(summary)))
    if report["triton_kills"]:
        columns = ["at_s", "orphaned_stubs", "shm_regions_removed", "restart_s", "ready_to_next_answer_s"]
        columns += ["ready_to_next_event_s", "kill_to_next_event_s"]
        parts.append("\nTriton SIGKILLs:\n" + format_table(report["triton_kills"], columns))
    if report["worker_kills"]:
        restarts = [kill["restart_s"] for kill in report["worker_kills"] if kill["restart_s"] is not None]
        spread = (
            f"{min(restarts)}-{max(restarts)} s, median {float(np.median(restarts)):.1f} s"
            if restarts
            else "-"
        )
        parts.append(
            f"\nworker SIGKILLs: {len(report['worker_kills'])}, each ready again (partitions assigned) after "
            + spread
        )
    invariants = [
        {"invariant": name, "value": value, "holds": "yes" if value is True or value == 0 else "NO"}
        for name, value in report["invariants"].items()
    ]
    parts.append("\ninvariants:\n" + format_table(invariants, ["invariant", "value", "holds"]))
    parts.append(f"\nresult: {'PASS' if report['ok'] else 'FAIL'}")
    return "\n".join(parts)
