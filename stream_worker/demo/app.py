"""`stream-worker demo`: the whole pipeline on one machine, from camera frames to plate events,
sightings and watch-list alerts on screen.

It starts what is missing (the local Tansu broker, the local Triton, after exporting the models if
needed), puts the sample van on a watch list, starts one worker, the sightings service and the
alerts service as child processes (`python -m stream_worker run`, `... sightings` and `... alerts`,
exactly what production runs; services.py) and the history store with its console (history.py),
publishes frames from N simulated cameras at a frame rate, and prints every plate event, dead
letter, sighting and alert as it arrives, then a summary. The sample photos repeat, so each camera
sees one vehicle standing in view: its frames' reads make one sighting and one alert (the gaps are
stretched to bridge a slow frame rate). When there is a video (`<weights dir>/../videos`, or
--video-camera), the camera connector (`python -m stream_worker connect`) reads it in a loop as one
more camera (video_cameras.py), its frames counted apart from the demo's own (connector_feed.py).
Each camera is set up (before the worker starts) with a zone over the street and plate pictures on,
so the events name the plate's zone and the viewer saves each plate's picture to --plate-images.
The notify service (`python -m stream_worker notify`) delivers every alert to a webhook receiver
the demo runs itself on 127.0.0.1 (webhook.py), and the summary says what arrived there.

This module is the composition root; each job has its module in this package: the options and
errors (options), the servers (servers), the topics and watch list (topics), the services
(services), the cameras (cameras) and their settings (cameras_settings), watching the children
(liveness), showing the records and saving their pictures (viewer), the webhook (webhook), deciding
when it is over (settle) and the table and summary (report).

Everything it starts it stops, whatever happens: the stops are registered as each child starts
and run in reverse order from a `finally` (errors, Ctrl-C, SIGTERM and SIGHUP all end up there; a
second signal while stopping kills at once), and a watchdog process (`stream_worker.watchdog`)
kills the children's process groups should the demo itself be killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from confluent_kafka import KafkaException

from stream_worker.demo import cameras_settings as demo_cameras_settings
from stream_worker.demo import topics as demo_topics
from stream_worker.demo import video_cameras as demo_video_cameras
from stream_worker.demo.cameras import CORRUPT_FRAME, Cameras, camera_frames, camera_ids, resolve_inputs
from stream_worker.demo.connector_feed import ConnectorFeed, connector_child
from stream_worker.demo.history import HistoryStore
from stream_worker.demo.liveness import Liveness
from stream_worker.demo.options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PICTURE_RUNS_KEPT,
    DemoError,
    DemoOptions,
)
from stream_worker.demo.report import ConnectorSummary, Results, summary_lines, table_header
from stream_worker.demo.servers import Servers
from stream_worker.demo.services import ServiceChild, log_tail
from stream_worker.demo.settle import Consumer, Settler, alerts_consumer, sightings_consumer
from stream_worker.demo.topics import DemoTopics
from stream_worker.demo.video_cameras import VideoCamera
from stream_worker.demo.viewer import Viewer, prepare_pictures_dir, prune_picture_runs
from stream_worker.demo.webhook import SECRET_ENV, WebhookReceiver
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import prepare_models
from stream_worker.nets.weights import default_weights_dir
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.service.compacted import CompactedTopicError
from stream_worker.terminal import Terminal
from stream_worker.up.announcements import announcements

__all__ = [
    "CORRUPT_FRAME",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Demo",
    "DemoError",
    "DemoOptions",
    "camera_frames",
    "resolve_inputs",
    "run_demo",
]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # exit code 128 + signal number
SESSION_TIMEOUT_MS = 6000  # a group join takes about half of it on Tansu
SIGHTINGS_SILENCE_S = 3.0  # the cameras stop at the end: their last passes close on silence

log = logging.getLogger(__name__)


class Interrupted(BaseException):
    """A stop signal arrived (BaseException: no `except Exception` on the way may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Demo:
    """One demo run; `run()` does the work, `stop()` (always called) undoes all of it."""

    def __init__(self, options: DemoOptions, console: Terminal) -> None:
        self.options = options
        self.console = console
        self.run_id = uuid.uuid4().hex[:8]
        self.workdir = Path(tempfile.mkdtemp(prefix=f"stream-worker-demo-{self.run_id}-"))
        self._cleanup = contextlib.ExitStack()
        self.liveness = Liveness()
        self.servers = Servers(console, self.liveness, self._cleanup)
        self.results = Results()
        self.webhook = WebhookReceiver()  # listening already: its port goes into the notify target
        self._cleanup.callback(self.webhook.stop)

    # --- lifecycle ---------------------------------------------------------------------------

    def run(self) -> int:
        options = self.options
        weights_dir = options.weights_dir or default_weights_dir()
        inputs = resolve_inputs(options.inputs, weights_dir)
        videos = demo_video_cameras.video_cameras(options.video_cameras, weights_dir, options.video_camera)
        self.results.connector_cameras = frozenset(camera.camera_id for camera in videos)
        pictures_dir = prepare_pictures_dir(options.plate_images_dir(self.run_id))
        if options.plate_images is None:
            prune_picture_runs(pictures_dir.parent, keep=PICTURE_RUNS_KEPT)
        if options.triton_url is None:
            self._prepare_models(weights_dir)
        self._cleanup.callback(self.liveness.start_watchdog().release)  # before the first child
        if options.triton_url is None:
            self.servers.start_triton(options.repository)
        bootstrap = options.bootstrap_servers or self.servers.start_broker()
        self.webhook.start()
        topics = self._create_topics(bootstrap, videos)
        triton_url = options.triton_url or self.servers.wait_for_triton()
        if options.triton_url is not None:
            self.servers.check_external_triton(options.triton_url)
        worker, sightings, alerts, connector = self._start_services(bootstrap, triton_url, topics, videos)
        consumers = [sightings_consumer(sightings), alerts_consumer(alerts)]
        feed = None
        if connector is not None:
            retire = self.liveness.retire
            feed = ConnectorFeed(videos, connector, bootstrap, topics, lambda: retire(connector))
            self._cleanup.callback(feed.close)
        return self._stream(inputs, bootstrap, topics, worker, consumers, pictures_dir, feed)

    @property
    def started_anything(self) -> bool:
        return self.liveness.watchdog is not None

    def stop(self) -> None:
        """Stop everything started, newest first (install `hurry` as the signal handler first)."""
        try:
            self._cleanup.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def hurry(self, _signum: int, _frame: FrameType | None) -> None:
        """A stop signal while stopping: kill every child group now instead of waiting."""
        self.console.line("stopping at once (second signal)", style="yellow")
        self.liveness.kill_all()

    # --- setting up --------------------------------------------------------------------------

    def _prepare_models(self, weights_dir: Path) -> None:
        with self.console.step(f"checking the models in {self.options.repository} (first run exports them)"):
            try:
                prepare_models(weights_dir, self.options.repository)
            except ModelPrepareError as error:
                raise DemoError(str(error), EXIT_USAGE) from error

    def _create_topics(self, bootstrap: str, videos: Sequence[VideoCamera]) -> DemoTopics:
        """The default topics on the local broker; fresh, run-specific ones on an external broker
        (deleted at the end). The sample van goes on the watch list, and the cameras get their
        settings, before any service starts."""
        external = not self.options.local_broker
        topics = DemoTopics.for_run(self.run_id if external else None)
        names = topics.with_connector(bool(videos))
        if external:
            self._cleanup.callback(demo_topics.delete, bootstrap, names)
        with self.console.step(f"creating topics {', '.join(names)}"):
            demo_topics.create(bootstrap, topics, self.options.partitions, connector=bool(videos))
        entry = f"{demo_topics.SAMPLE_PLATE} ({demo_topics.SAMPLE_LIST}: {demo_topics.SAMPLE_LABEL})"
        with self.console.step(f"putting the sample van on the watch list: {entry}"):
            demo_topics.watch_sample_van(bootstrap, topics)
        cameras = camera_ids(self.options.cameras)
        with self.console.step(demo_cameras_settings.describe(cameras)):
            demo_cameras_settings.write_demo_settings(bootstrap, topics.cameras, cameras)
        if videos:
            with self.console.step(demo_video_cameras.describe(videos)):
                demo_video_cameras.write_video_settings(bootstrap, topics.cameras, videos)
        with self.console.step(f"pointing the notify service at the demo's webhook {self.webhook.url}"):
            try:
                self.webhook.write_target(bootstrap, topics.notify_targets)
            except (CompactedTopicError, KafkaException) as error:
                raise DemoError(
                    f"cannot write the notify target to {topics.notify_targets}: {error}"
                ) from error
        return topics

    def _start_services(
        self, bootstrap: str, triton_url: str, topics: DemoTopics, videos: Sequence[VideoCamera]
    ) -> tuple[ServiceChild, ServiceChild, ServiceChild, ServiceChild | None]:
        group = f"stream-worker-demo-{self.run_id}"
        common = ["--bootstrap-servers", bootstrap, "--session-timeout-ms", str(SESSION_TIMEOUT_MS)]
        if self.options.local_broker:
            common.append("--local-broker")
        gap_s = str(self.options.pass_gap_s)
        worker = ServiceChild(
            "run",
            [*common, "--triton-url", triton_url, "--group-id", group, "--input-topic", topics.frames,
             "--output-topic", topics.plates, "--dlq-topic", topics.dead_letters,
             "--cameras-topic", topics.cameras],
            self.workdir,
        )  # fmt: skip
        sightings = ServiceChild(
            "sightings",
            [*common, "--group-id", f"{group}-sightings", "--input-topic", topics.plates,
             "--output-topic", topics.sightings, "--gap-s", gap_s, "--silence-s", str(SIGHTINGS_SILENCE_S)],
            self.workdir,
        )  # fmt: skip
        alerts = ServiceChild(
            "alerts",
            [*common, "--group-id", f"{group}-alerts", "--input-topic", topics.plates,
             "--output-topic", topics.alerts, "--watchlist-topic", topics.watchlist, "--pass-gap-s", gap_s,
             "--sightings-topic", topics.sightings, "--sightings-group-id", f"{group}-alerts-sightings",
             "--corrections-topic", topics.corrections,
             "--corrections-group-id", f"{group}-alerts-corrections"],
            self.workdir,
        )  # fmt: skip
        store = HistoryStore(common, group, topics, self.workdir)
        # --allow-private-targets is the service's, not the target's: the demo's webhook is on loopback.
        notify = ServiceChild(
            "notify",
            [*common, "--group-id", f"{group}-notify", "--input-topic", topics.alerts,
             "--sightings-topic", topics.sightings, "--sightings-group-id", f"{group}-notify-sightings",
             "--watchlist-topic", topics.watchlist, "--targets-topic", topics.notify_targets,
             "--dlq-topic", topics.notify_dead_letters, "--console-url", store.console_url,
             "--deliveries-topic", topics.notify_deliveries, "--tests-topic", topics.notify_tests,
             "--status-topic", topics.notify_status, "--replays-topic", topics.notify_replays,
             "--visits-topic", topics.visits, "--visits-group-id", f"{group}-notify-visits",
             "--allow-private-targets"],
            self.workdir,
            env={SECRET_ENV_PREFIX + SECRET_ENV: self.webhook.secret},
        )  # fmt: skip
        connector = connector_child(common, group, topics, self.workdir) if videos else None
        services = (store, worker, sightings, alerts, notify, *([connector] if connector is not None else []))
        with self.console.step(
            "starting the history store and its console, the worker, the sightings, alerts and notify "
            "services"
            + (" and the camera connector" if connector is not None else "")
            + " (they join their groups)"
        ):
            for service in services:
                service.start()
                self._cleanup.callback(service.stop)
                self.liveness.services.append(service)
                self.liveness.watch()
            try:
                for service in services:
                    service.wait_ready(self.liveness.check)
            except TimeoutError as error:
                raise DemoError(str(error)) from error
        for service in services:
            self.console.line(
                f"   {service.command} pid {service.pid}, metrics {service.metrics_url}", style="dim"
            )
        self.console.line(
            "   notify runs with --allow-private-targets, a flag of the whole service (not per target), "
            "for the demo's webhook on 127.0.0.1; leave it off in production",
            style="dim",
        )
        self.console.line(f"console: {store.console_url} (while the demo runs)", style="bold")
        for line in announcements(store):
            self.console.line(f"   {line}", style="bold")
        return worker, sightings, alerts, connector

    # --- publishing, showing, summing up -----------------------------------------------------

    def _stream(
        self,
        inputs: Sequence[Path],
        bootstrap: str,
        topics: DemoTopics,
        worker: ServiceChild,
        consumers: list[Consumer],
        pictures_dir: Path,
        feed: ConnectorFeed | None,
    ) -> int:
        options = self.options
        viewer = Viewer(bootstrap, topics, self.results, self.console, pictures_dir)
        self._cleanup.callback(viewer.close)
        if feed is not None:
            feed.start_counting()
        cameras = Cameras(options, inputs, bootstrap, topics.frames)
        self.liveness.checks.append(cameras.check)
        self.console.line(
            f"publishing {options.planned_frames} frames: {options.cameras} camera(s) x "
            f"{options.frames_per_camera} at {options.fps:g} fps"
            + (f", plus {options.corrupt_frames} corrupt frame(s) on cam-1" if options.corrupt_frames else "")
        )
        self.console.line(table_header(), style="bold")
        self._cleanup.callback(cameras.stop)
        cameras.start()
        self.results.first_published_at = cameras.started_at
        settler = Settler(
            self.console, viewer, self.results, cameras, self.liveness.check, options.settle_timeout_s, feed
        )
        settler.until_results(worker)
        settler.until_drained(consumers)
        settler.until_delivered(lambda: set(self.webhook.received()))
        self.results.webhook = self.webhook.received()
        return self._finish(cameras, feed)

    def _finish(self, cameras: Cameras, feed: ConnectorFeed | None) -> int:
        connector = self._connector_summary(feed)
        self.console.line("")
        self.console.line("summary", style="bold")
        sent = cameras.sent
        for line in summary_lines(self.results, sent, self.options.cameras, cameras.seconds, connector):
            self.console.line(f"  {line}")
        if cameras.failed:
            self.console.error(f"{cameras.failed} frames could not be published: {cameras.first_error}")
        ok = not cameras.failed and self.results.accounted >= sent
        if undelivered := self.results.undelivered:
            self.console.error(
                f"{len(undelivered)} alert(s) did not reach the demo's webhook with a valid signature "
                f"(first: {undelivered[0]})"
            )
            ok = False
        if feed is not None and connector is not None:
            if feed.exit_code != 0:
                self.console.error(
                    f"the camera connector exited with {feed.exit_code} when stopped; its log ends with:\n"
                    f"{log_tail(feed.child.log_path)}"
                )
            ok = ok and feed.exit_code == 0 and self.results.connector_results >= connector.frames
        return EXIT_OK if ok else EXIT_FAILED

    def _connector_summary(self, feed: ConnectorFeed | None) -> ConnectorSummary | None:
        """The connector's frames and its cameras' last status (an unreadable status is said, not fatal)."""
        if feed is None:
            return None
        try:
            statuses = feed.statuses()
        except (CompactedTopicError, KafkaException) as error:
            self.console.error(f"cannot read the cameras' status: {error}")
            statuses = []
        clips = {camera.camera_id: camera.path.name for camera in feed.cameras}
        return ConnectorSummary(feed.frames, statuses, clips)


def run_demo(options: DemoOptions, console: Terminal | None = None) -> int:
    """Run the demo; the exit status (0 ok, 1 failed, 2 unusable input, 128+N after signal N)."""
    console = console or Terminal()
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


def _stop_all(demo: Demo, console: Terminal) -> bool:
    """Stop the demo's children; False (after saying why) when something could not be stopped cleanly."""
    try:
        if not demo.started_anything:
            demo.stop()
            return True
        with console.step("stopping the worker, the services and the servers"):
            demo.stop()
    except Exception as error:
        console.error(f"error while stopping: {error}")
        return False
    return True


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)
