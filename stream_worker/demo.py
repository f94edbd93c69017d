"""`stream-worker demo`: the whole pipeline on one machine, from camera frames to plate events and
sightings on screen.

It starts what is missing (the local Tansu broker, the local Triton, after exporting the models
if needed), one worker and the sightings service as child processes (`python -m stream_worker run`
and `... sightings`, exactly what production runs; demo_services.py), publishes frames from N
simulated cameras at a frame rate, and prints every plate event, dead letter and sighting as it
arrives, then a summary. The sample photos repeat, so each camera sees one vehicle standing in
view: its frames' reads make one sighting (the gap is stretched to bridge a slow frame rate).

Everything it starts it stops, whatever happens: the stops are registered as each child starts
and run in reverse order from a `finally` (errors, Ctrl-C, SIGTERM and SIGHUP all end up there; a
second signal while stopping kills at once), and a watchdog process (`stream_worker.children`)
kills the children's process groups should the demo itself be killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from stream_worker.children import Watchdog
from stream_worker.console import Console
from stream_worker.demo_report import (
    Results,
    dead_letter_row,
    event_rows,
    sighting_row,
    summary_lines,
    table_header,
)
from stream_worker.demo_services import ServiceChild, log_tail
from stream_worker.launchers.broker import BrokerError, LocalBroker, create_topics
from stream_worker.launchers.triton import LocalTriton
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import prepare_models
from stream_worker.nets.weights import default_weights_dir
from stream_worker.service.http import read_metric
from stream_worker.service.topic_reader import TopicReader
from stream_worker.tools.produce import (
    FrameSourceError,
    ProduceReport,
    check_sources,
    iter_frames,
    produce_frames,
)
from stream_worker.triton_client import PlateRecognitionClient
from stream_worker.worker.metrics import read_frames_in

EXIT_OK = 0
EXIT_FAILED = 1  # a server or the worker failed, or frames went unaccounted for
EXIT_USAGE = 2  # nothing to publish, an unusable path, missing or corrupt weights
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # exit code 128 + signal number

DEFAULT_TOPICS = ("frames", "plates", "frames.dlq", "sightings")
CORRUPT_FRAME = b"this is not a JPEG: a corrupt frame to show the dead-letter path"
SESSION_TIMEOUT_MS = 6000  # a group join takes about half of it on Tansu
TRITON_START_TIMEOUT_S = 300.0
POLL_S = 0.2
VIEW_BATCH = 100  # records the viewer shows per poll
SIGHTINGS_SILENCE_S = 3.0  # the cameras stop at the end: their last passes close on silence
SIGHTINGS_WAIT_S = 30.0
# Results idle this long with frames outstanding: ask the worker whether it ever received them.
BROKER_SKIP_SETTLE_S = 10.0

log = logging.getLogger(__name__)


class DemoError(Exception):
    """The demo cannot go on; the message says what failed and what to do."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Interrupted(BaseException):
    """A stop signal arrived (BaseException: no `except Exception` on the way may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass(frozen=True)
class DemoOptions:
    inputs: Sequence[Path] = ()
    cameras: int = 3
    fps: float = 1.0
    duration_s: float = 10.0
    corrupt_frames: int = 1
    bootstrap_servers: str | None = None
    triton_url: str | None = None
    weights_dir: Path | None = None
    repository: Path = Path("model_repository")
    partitions: int = 3
    settle_timeout_s: float = 60.0

    @property
    def frames_per_camera(self) -> int:
        return max(1, round(self.fps * self.duration_s))


# --- what to publish -------------------------------------------------------------------------


def resolve_inputs(paths: Sequence[Path], weights_dir: Path) -> list[Path]:
    """The paths given, else the JPEGs of `<weights dir>/../samples`; DemoError when neither."""
    if paths:
        try:
            check_sources(paths)
        except FrameSourceError as error:
            raise DemoError(str(error), EXIT_USAGE) from error
        return list(paths)
    samples = weights_dir.parent / "samples"
    jpegs = sorted(p for p in samples.glob("*") if p.suffix.lower() in {".jpg", ".jpeg"} and p.is_file())
    if not jpegs:
        raise DemoError(
            f"no frames to publish: give JPEG files, folders or videos as arguments, or set "
            f"LPR_WEIGHTS_DIR (or --weights-dir) so that its ../samples folder holds JPEGs "
            f"(looked in {samples})",
            EXIT_USAGE,
        )
    return jpegs


def camera_frames(
    inputs: Sequence[Path], camera_id: str, count: int, corrupt: int, stop: threading.Event
) -> Iterator[tuple[str, bytes]]:
    """`count` frames cycling through `inputs`, with `corrupt` corrupt frames spread evenly among
    them; ends early once `stop` is set."""
    corrupt_after = Counter(
        min(count, max(1, round((i + 1) * count / (corrupt + 1)))) for i in range(corrupt)
    )
    frames = itertools.islice(iter_frames(inputs, camera_id, repeat=count), count)
    corrupt_sent = 0
    for index, frame in enumerate(frames, start=1):
        if stop.is_set():
            return
        yield frame
        for _ in range(corrupt_after[index]):
            corrupt_sent += 1
            yield f"{camera_id}-corrupt-{corrupt_sent}", CORRUPT_FRAME


# --- the run ---------------------------------------------------------------------------------


class Demo:
    """One demo run; `run()` does the work, `stop()` (always called) undoes all of it."""

    def __init__(self, options: DemoOptions, console: Console) -> None:
        self.options = options
        self.console = console
        self.run_id = uuid.uuid4().hex[:8]
        self.workdir = Path(tempfile.mkdtemp(prefix=f"stream-worker-demo-{self.run_id}-"))
        self._cleanup = contextlib.ExitStack()
        self._watchdog: Watchdog | None = None
        self._broker: LocalBroker | None = None
        self._triton: LocalTriton | None = None
        self._triton_thread: threading.Thread | None = None
        self._triton_error: BaseException | None = None
        self._triton_cancel = threading.Event()
        self._worker: ServiceChild | None = None
        self._sightings: ServiceChild | None = None
        self._stop_producing = threading.Event()
        self._producers: list[threading.Thread] = []
        self._reports: dict[str, ProduceReport] = {}
        self._handed_over: Counter[str] = Counter()  # frames given to each camera's producer
        self._producer_errors: list[BaseException] = []
        self.results = Results()

    # --- lifecycle ---------------------------------------------------------------------------

    def run(self) -> int:
        options = self.options
        weights_dir = options.weights_dir or default_weights_dir()
        inputs = resolve_inputs(options.inputs, weights_dir)
        if options.triton_url is None:
            self._prepare_models(weights_dir)
        self._watchdog = Watchdog()  # before the first child
        self._cleanup.callback(self._watchdog.release)
        if options.triton_url is None:
            self._start_triton()
        bootstrap = options.bootstrap_servers or self._start_broker()
        topics = self._create_topics(bootstrap)
        triton_url = options.triton_url or self._wait_for_local_triton()
        if options.triton_url is not None:
            self._check_external_triton(options.triton_url)
        self._start_services(bootstrap, triton_url, topics)
        return self._stream(inputs, bootstrap, topics)

    @property
    def _local_broker(self) -> bool:
        """The demo started the embedded broker: its clients publish as that broker needs."""
        return self.options.bootstrap_servers is None

    @property
    def started_anything(self) -> bool:
        return self._watchdog is not None

    def stop(self) -> None:
        """Stop everything started, newest first (install `hurry` as the signal handler first)."""
        try:
            self._cleanup.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def hurry(self, _signum: int, _frame: FrameType | None) -> None:
        """A stop signal while stopping: kill every child group now instead of waiting."""
        self.console.line("stopping at once (second signal)", style="yellow")
        if self._watchdog is not None:
            self._watchdog.kill_all()

    def _watch_children(self) -> None:
        """Hand each child's process group to the watchdog as soon as it exists."""
        assert self._watchdog is not None
        for pid in (
            getattr(self._broker, "pid", None),
            getattr(self._triton, "pid", None),
            getattr(self._worker, "pid", None),
            getattr(self._sightings, "pid", None),
        ):
            if pid is not None:
                self._watchdog.watch(pid)

    def _check_alive(self) -> None:
        if self._broker is not None and not self._broker.is_running():
            raise DemoError(f"the local broker exited unexpectedly: {self._broker.log_tail()}")
        if self._triton is not None and self._triton_thread is None and not self._triton.is_running():
            raise DemoError(f"the local Triton exited unexpectedly:\n{self._triton.log_tail()}")
        if self._producer_errors:
            raise DemoError(f"publishing frames failed: {self._producer_errors[0]}")
        for service in (self._worker, self._sightings):
            if service is not None and (code := service.exit_code()) is not None:
                raise DemoError(
                    f"{service.command} exited unexpectedly with code {code}; its log ends with:\n"
                    f"{log_tail(service.log_path)}"
                )

    # --- servers -----------------------------------------------------------------------------

    def _prepare_models(self, weights_dir: Path) -> None:
        with self.console.step(f"checking the models in {self.options.repository} (first run exports them)"):
            try:
                prepare_models(weights_dir, self.options.repository)
            except ModelPrepareError as error:
                raise DemoError(str(error), EXIT_USAGE) from error

    def _start_triton(self) -> None:
        """Start the local Triton in the background: it boots while the broker and worker start."""
        triton = LocalTriton(self.options.repository)
        self._triton = triton
        self._cleanup.callback(self._stop_triton)

        def start() -> None:
            try:
                triton.start(timeout_s=TRITON_START_TIMEOUT_S, cancel=self._triton_cancel)
            except BaseException as error:
                self._triton_error = error

        self._triton_thread = threading.Thread(target=start, name="triton-start", daemon=True)
        self._triton_thread.start()

    def _wait_for_local_triton(self) -> str:
        assert self._triton is not None and self._triton_thread is not None
        with self.console.step("starting the local Triton (plate_recognition, detector, STN, LPRNet)"):
            while self._triton_thread.is_alive():
                self._watch_children()
                self._triton_thread.join(POLL_S)
            self._triton_thread = None
            if self._triton_error is not None:
                raise DemoError(f"the local Triton did not start: {self._triton_error}")
            self._watch_children()
        self.console.line(f"   Triton gRPC {self._triton.grpc_url} (pid {self._triton.pid})", style="dim")
        return str(self._triton.grpc_url)

    def _stop_triton(self) -> None:
        self._triton_cancel.set()  # a start still waiting for readiness stops the server itself
        if self._triton_thread is not None:
            self._triton_thread.join()
        if self._triton is not None:
            self._triton.close()

    def _check_external_triton(self, url: str) -> None:
        with self.console.step(f"checking Triton at {url}"):
            client = PlateRecognitionClient(url, timeout_s=5.0)
            deadline = time.monotonic() + 30.0
            while not client.is_ready():
                if time.monotonic() > deadline:
                    raise DemoError(
                        f"Triton at --triton-url {url} is not ready (server or model plate_recognition) "
                        "after 30 s; start it with `stream-worker triton` or leave --triton-url out"
                    )
                time.sleep(0.5)

    def _start_broker(self) -> str:
        broker = LocalBroker()
        self._broker = broker
        self._cleanup.callback(broker.stop)
        with self.console.step("starting the local Kafka broker (Tansu, in memory)"):
            try:
                broker.start()
            except BrokerError as error:
                raise DemoError(f"the local broker did not start: {error}") from error
            self._watch_children()
        self.console.line(f"   bootstrap servers {broker.bootstrap_servers} (pid {broker.pid})", style="dim")
        return str(broker.bootstrap_servers)

    def _create_topics(self, bootstrap: str) -> tuple[str, str, str, str]:
        """The default topics (frames, plates, dead letters, sightings) on the local broker; fresh,
        run-specific ones on an external broker."""
        topics = DEFAULT_TOPICS
        if self.options.bootstrap_servers is not None:
            topics = tuple(f"stream-worker-demo-{self.run_id}.{name}" for name in DEFAULT_TOPICS)
        if self.options.bootstrap_servers is not None:
            self._cleanup.callback(self._delete_topics, bootstrap, topics)
        with self.console.step(f"creating topics {', '.join(topics)}"):
            try:
                create_topics(bootstrap, topics, self.options.partitions)
            except (BrokerError, KafkaException) as error:
                raise DemoError(
                    f"cannot create topics on --bootstrap-servers {bootstrap}: {error}"
                ) from error
        return topics

    def _delete_topics(self, bootstrap: str, topics: Sequence[str]) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the futures
        futures = admin.delete_topics(list(topics), request_timeout=15)
        for name, future in futures.items():
            if (error := future.exception(timeout=15)) is not None:
                log.warning("could not delete demo topic %s: %s", name, error)

    # --- worker and sightings --------------------------------------------------------------

    def _start_services(self, bootstrap: str, triton_url: str, topics: tuple[str, ...]) -> None:
        frames, plates, dead_letters, sightings = topics
        common = ["--bootstrap-servers", bootstrap, "--session-timeout-ms", str(SESSION_TIMEOUT_MS)]
        if self._local_broker:
            common.append("--local-broker")
        self._worker = ServiceChild(
            "run",
            [*common, "--triton-url", triton_url, "--group-id", f"stream-worker-demo-{self.run_id}",
             "--input-topic", frames, "--output-topic", plates, "--dlq-topic", dead_letters],
            self.workdir,
        )  # fmt: skip
        # The samples repeat every other frame (a corrupt frame may come between): stretch the gap
        # so that each camera's repeated car makes one pass.
        gap_s = min(20.0, max(1.5, 3.5 / self.options.fps))
        self._sightings = ServiceChild(
            "sightings",
            [*common, "--group-id", f"stream-worker-demo-{self.run_id}-sightings", "--input-topic", plates,
             "--output-topic", sightings, "--gap-s", str(gap_s), "--silence-s", str(SIGHTINGS_SILENCE_S)],
            self.workdir,
        )  # fmt: skip
        with self.console.step("starting the worker and the sightings service (they join their groups)"):
            for service in (self._worker, self._sightings):
                service.start()
                self._cleanup.callback(service.stop)
                self._watch_children()
            try:
                for service in (self._worker, self._sightings):
                    service.wait_ready(self._check_alive)
            except TimeoutError as error:
                raise DemoError(str(error)) from error
        for service in (self._worker, self._sightings):
            self.console.line(
                f"   {service.command} pid {service.pid}, metrics {service.metrics_url}", style="dim"
            )

    # --- producing and reading back ----------------------------------------------------------

    def _start_producers(self, inputs: Sequence[Path], bootstrap: str, topic: str) -> None:
        options = self.options
        self._cleanup.callback(self._stop_producers)
        self.results.first_published_at = time.monotonic()
        for number in range(1, options.cameras + 1):
            camera_id = f"cam-{number}"
            corrupt = options.corrupt_frames if number == 1 else 0
            frames = camera_frames(
                inputs, camera_id, options.frames_per_camera, corrupt, self._stop_producing
            )

            def produce(camera_id: str = camera_id, frames: Iterator[tuple[str, bytes]] = frames) -> None:
                try:
                    self._reports[camera_id] = produce_frames(
                        self._count(camera_id, frames),
                        bootstrap_servers=bootstrap,
                        topic=topic,
                        camera_id=camera_id,
                        fps=options.fps,
                        local_broker=self._local_broker,
                    )
                except Exception as error:  # reported by the main loop, which owns the exit status
                    self._producer_errors.append(error)

            thread = threading.Thread(target=produce, name=f"produce-{camera_id}", daemon=True)
            thread.start()
            self._producers.append(thread)

    def _count(self, camera_id: str, frames: Iterator[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
        for frame in frames:
            self._handed_over[camera_id] += 1
            yield frame

    def _stop_producers(self) -> None:
        self._stop_producing.set()
        for thread in self._producers:
            thread.join()

    def _stream(self, inputs: Sequence[Path], bootstrap: str, topics: tuple[str, ...]) -> int:
        options = self.options
        planned = options.cameras * options.frames_per_camera + options.corrupt_frames
        # Read from the side, in offset order with the local broker's skips healed (service/gaps.py).
        viewer = TopicReader(bootstrap, topics[1:])
        self._cleanup.callback(viewer.close)
        self.console.line(
            f"publishing {planned} frames: {options.cameras} camera(s) x {options.frames_per_camera} "
            f"at {options.fps:g} fps"
            + (f", plus {options.corrupt_frames} corrupt frame(s) on cam-1" if options.corrupt_frames else "")
        )
        self.console.line(table_header(), style="bold")
        self._start_producers(inputs, bootstrap, topics[0])
        with self.console.counters({"published": planned, "results": planned}) as bars:
            idle_since = time.monotonic()
            while True:
                messages = viewer.poll(VIEW_BATCH, POLL_S)
                now = time.monotonic()
                for message in messages:
                    self._show(message, topics, now)
                    idle_since = now
                self._check_alive()
                self._watch_children()
                producing = any(thread.is_alive() for thread in self._producers)
                bars.update("published", sum(self._handed_over.values()))
                if producing:
                    bars.update("results", self.results.accounted)
                    idle_since = now
                    continue
                sent = sum(report.sent for report in self._reports.values())
                bars.update("results", self.results.accounted, total=sent)
                if self.results.accounted >= sent:
                    break
                if now - idle_since > BROKER_SKIP_SETTLE_S and self._broker_skipped(sent):
                    break
                if now - idle_since > options.settle_timeout_s:
                    assert self._worker is not None
                    self.console.error(
                        f"no new results for {options.settle_timeout_s:.0f} s with "
                        f"{sent - self.results.accounted} frames unaccounted for; worker log ends with:\n"
                        f"{log_tail(self._worker.log_path)}"
                    )
                    break
        self._wait_for_sightings(viewer, topics)
        return self._finish()

    def _wait_for_sightings(self, viewer: TopicReader, topics: tuple[str, ...]) -> None:
        """Until the sightings service holds no pass open or unpublished (the cameras' last passes
        close on silence), showing what arrives."""
        assert self._sightings is not None
        url = self._sightings.metrics_url
        deadline = time.monotonic() + SIGHTINGS_WAIT_S
        with self.console.step("waiting for the last sightings (the cameras fell silent)"):
            while time.monotonic() < deadline:
                for message in viewer.poll(VIEW_BATCH, POLL_S):
                    self._show(message, topics, time.monotonic())
                self._check_alive()
                events_in = read_metric(url, "stream_worker_sightings_events_in_total")
                held = read_metric(url, "stream_worker_sightings_held")
                if events_in is not None and events_in >= len(self.results.events) and held == 0:
                    break
            for _ in range(5):  # what was published last
                for message in viewer.poll(VIEW_BATCH, POLL_S):
                    self._show(message, topics, time.monotonic())

    def _broker_skipped(self, sent: int) -> bool:
        """True when every frame the worker received has its result and the rest never reached it.

        The local Tansu broker now and then skips a record on a live fetch (README, Limitations):
        waiting longer would not bring those frames, and the summary names the broker, not the
        worker, as where they went missing.
        """
        received = read_frames_in(self._worker.metrics_url) if self._worker is not None else None
        if received is None or received != self.results.accounted or received >= sent:
            return False
        self.results.never_delivered = sent - received
        return True

    def _show(self, message: Any, topics: tuple[str, ...], received_at: float) -> None:
        if message.topic() == topics[3]:
            sighting = orjson.loads(message.value())
            if self.results.add_sighting(sighting):
                self.console.line(sighting_row(sighting), style="bold green")
        elif message.topic() == topics[1]:
            event = orjson.loads(message.value())
            if self.results.add_event(event, received_at):
                for row in event_rows(event):
                    self.console.line(row, style=None if event["plates"] else "dim")
        else:
            headers = {
                name: (raw or b"").decode("utf-8", errors="replace") for name, raw in message.headers() or []
            }
            if self.results.add_dead_letter(headers, received_at):
                self.console.line(dead_letter_row(headers), style="red")

    def _finish(self) -> int:
        reports = self._reports.values()
        sent = sum(report.sent for report in reports)
        failed = sum(report.failed for report in reports)
        seconds = max((report.seconds for report in reports), default=0.0)
        self.console.line("")
        self.console.line("summary", style="bold")
        for line in summary_lines(self.results, sent, self.options.cameras, seconds):
            self.console.line(f"  {line}")
        if failed:
            first = next(report.first_error for report in reports if report.first_error)
            self.console.error(f"{failed} frames could not be published: {first}")
        return EXIT_OK if not failed and self.results.accounted >= sent else EXIT_FAILED


def run_demo(options: DemoOptions, console: Console | None = None) -> int:
    """Run the demo; the exit status (0 ok, 1 failed, 2 unusable input, 128+N after signal N)."""
    console = console or Console()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in STOP_SIGNALS}
    demo: Demo | None = None
    status = EXIT_FAILED
    try:
        demo = Demo(options, console)
        status = demo.run()
    except Interrupted as interruption:
        console.line(f"interrupted ({interruption}): stopping everything the demo started", style="yellow")
        status = 128 + interruption.signum
    except DemoError as error:
        console.error(f"error: {error}")
        status = error.exit_code
    except KafkaException as error:
        console.error(f"error: Kafka: {error}")
    finally:
        if demo is not None:
            for sig in STOP_SIGNALS:
                signal.signal(sig, demo.hurry)
            if not _stop_all(demo, console):
                status = max(status, EXIT_FAILED)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status


def _stop_all(demo: Demo, console: Console) -> bool:
    """Stop the demo's children; False (after saying why) when something could not be stopped cleanly."""
    try:
        if not demo.started_anything:
            demo.stop()
            return True
        with console.step("stopping the worker and the servers"):
            demo.stop()
    except Exception as error:
        console.error(f"error while stopping: {error}")
        return False
    return True


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)
