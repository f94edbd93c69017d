"""`stream-worker bench sightings`: how much voting across a pass's frames beats a single frame.

Every labelled photo of a folder (`../shared/evalset/scenes`) becomes a short pass (bench/passes.py)
on one of a few simulated cameras; the passes of a camera are a few seconds apart in capture time,
and each camera ends with a blank frame so that its last pass closes on camera time. The frames go
through the real pipeline: the broker, Triton, `stream-worker run` and `stream-worker sightings`,
each as in production. Then, for every labelled plate with a known text:

- per frame: is the plate read exactly in that frame (box IoU >= 0.5, as `stream-worker eval`)?
- per sighting: is the text of its pass's sighting exact? A sighting belongs to a labelled plate
  when its best read's box lies on the plate in that frame; a plate with no sighting counts wrong,
  one with several is also counted as split (the one with most reads is scored).

Printed side by side, with the sightings' directions against the passes' and a JSON report.

With --alerts, half of the labelled plates (chosen by --seed) go on a watch list with their true
text and `stream-worker alerts` runs too; scored per labelled plate's pass (an alert belongs to the
plate its read's box lies on, as a sighting does): recall (listed passes alerted for their entry),
false alerts (on unlisted plates, on no labelled plate, or for another entry), duplicates, and the
latency from the pass's first frame published (and from its first PlateEvent) to its alert. The
same run's reads are then replayed offline through the service's pass rules (alerts/passes.py) at
several matching tolerances, so the default can be chosen from figures.

With --masks, each pass gets a camera of its own whose settings (on the run's own cameras topic,
written before the worker starts) mask the frame outside the pass's plates' track (bench/masks.py).
Either way, the sightings whose best read's box centre lies outside that track are counted.
Scoring and the printout: bench/sightings_score.py.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from bench import alerts as alert_scoring
from bench import environment
from bench.masks import pass_settings
from bench.passes import KINDS, Difficulty, ScenePass, make_pass
from bench.report import write_json
from bench.sightings_score import Outputs, PlannedPass, render, score
from stream_worker.cameras.records import encode_settings
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.topics import ALERTS, CAMERAS, FRAMES, FRAMES_DLQ, PLATES, SIGHTINGS, WATCHLIST
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.evaluation.labels import load_labels
from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.service_child import ServiceChild, ServiceStartError
from stream_worker.service.compacted import CompactedTopicError, write_compacted
from stream_worker.tools.produce import producer_config
from stream_worker.watchlists.topic import WatchlistStoreError, write_changes

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCENES = REPO_ROOT.parent / "shared" / "evalset" / "scenes"
PASS_GAP_S = 3.0  # capture time between two passes of one camera (twice the default gap)
READY_TIMEOUT_S = 300.0
SETTLE_S = 5.0  # after the last frame's event: wait this long for sightings to stop coming
BLANK_SIZE = (320, 240)


class SightingsBenchError(RuntimeError):
    """A server or a service failed, or the outputs never came."""


# --- the passes ------------------------------------------------------------------------------


def scene_passes(
    folder: Path, frames: int, limit: int | None, seed: int, difficulty: Difficulty = Difficulty()
) -> list[ScenePass]:
    """One pass per labelled photo with at least one known text, kinds in turn."""
    labels = load_labels(folder)
    passes = []
    for number, (name, label) in enumerate(sorted(labels.items())):
        if limit is not None and len(passes) >= limit:
            break
        if label.boxes is None or not any(label.texts):
            continue
        image = cv2.imread(str(folder / name), cv2.IMREAD_COLOR)
        if image is None:
            raise SightingsBenchError(f"{folder / name} cannot be read")
        kind = KINDS[len(passes) % len(KINDS)]
        passes.append(
            make_pass(image, name, label.texts, label.boxes, kind, frames, seed + number, difficulty)
        )
    if not passes:
        raise SightingsBenchError(f"{folder} has no labelled photo with a box and a text")
    return passes


def plan(passes: Sequence[ScenePass], cameras: int, fps: float, start_ms: int) -> list[PlannedPass]:
    """Passes spread over the cameras in turn, each camera's `PASS_GAP_S` apart in capture time."""
    clocks = [start_ms] * cameras
    planned = []
    for number, scene in enumerate(passes):
        camera = number % cameras
        ids = [f"{scene.name}#{k}" for k in range(len(scene.frames))]
        planned.append(PlannedPass(scene, f"cam-{camera}", clocks[camera], ids))
        clocks[camera] += int((len(scene.frames) / fps + PASS_GAP_S) * 1000)
    return planned


def records(planned: Sequence[PlannedPass], fps: float) -> Iterator[tuple[str, str, int, bytes]]:
    """(camera, frame id, captured_at ms, JPEG) in capture order per camera, then each camera's
    closing blank frame, `PASS_GAP_S` after its last pass."""
    ok, blank = cv2.imencode(".jpg", np.full((BLANK_SIZE[1], BLANK_SIZE[0], 3), 110, dtype=np.uint8))
    assert ok
    last: dict[str, int] = {}
    for item in planned:
        for k, (frame_id, frame) in enumerate(zip(item.frame_ids, item.scene.frames, strict=True)):
            captured = item.start_ms + int(k * 1000 / fps)
            last[item.camera_id] = captured
            yield item.camera_id, frame_id, captured, frame.jpeg
    for camera, captured in sorted(last.items()):
        yield camera, f"{camera}#end", captured + int(PASS_GAP_S * 1000), blank.tobytes()


# --- running the pipeline --------------------------------------------------------------------


@dataclass
class Topics:
    frames: str
    plates: str
    dead_letters: str
    sightings: str
    alerts: str
    watchlist: str
    cameras: str

    @classmethod
    def named(cls, prefix: str) -> Topics:
        return cls(
            *(f"{prefix}.{topic.name}" for topic in (FRAMES, PLATES, FRAMES_DLQ, SIGHTINGS)),
            *(f"{prefix}.{topic.name}" for topic in (ALERTS, WATCHLIST, CAMERAS)),
        )


class Service(ServiceChild):
    """`python -m stream_worker COMMAND` with its log in `log_dir`, ready once /readyz says so."""

    def __init__(self, command: str, args: list[str], log_dir: Path) -> None:
        super().__init__(command, args, log_dir / f"{command}.log", metrics_port=free_port())
        self.start()

    def check(self) -> None:
        if (code := self.returncode) is not None:
            raise SightingsBenchError(f"{self.command} exited with {code}:\n{self.log_tail()}")

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:  # type: ignore[override]
        try:
            super().wait_ready(timeout_s, poll_s=0.3)
        except ServiceStartError as error:
            self.check()
            raise SightingsBenchError(
                f"{self.command} not ready after {timeout_s:.0f} s:\n{self.log_tail()}"
            ) from error


def run_passes(
    bootstrap_servers: str,
    triton_url: str,
    planned: Sequence[PlannedPass],
    fps: float,
    partitions: int = 3,
    timeout_s: float = 1800.0,
    sightings_args: Sequence[str] = (),
    local_broker: bool = False,
    watchlist: Sequence[WatchEntry] | None = None,
    camera_settings: Mapping[str, CameraSettings] | None = None,
) -> Outputs:
    """Publish the planned passes through the worker and the sightings service (and, given a
    `watchlist`, the alerts service on it); their outputs. `camera_settings` go to the run's own
    cameras topic before the worker starts (without them the worker reads that topic empty)."""
    return run_frames(
        bootstrap_servers,
        triton_url,
        records(planned, fps),
        partitions,
        timeout_s,
        sightings_args,
        local_broker,
        watchlist,
        camera_settings,
    )


def run_frames(
    bootstrap_servers: str,
    triton_url: str,
    frames: Iterator[tuple[str, str, int, bytes]],
    partitions: int = 3,
    timeout_s: float = 1800.0,
    sightings_args: Sequence[str] = (),
    local_broker: bool = False,
    watchlist: Sequence[WatchEntry] | None = None,
    camera_settings: Mapping[str, CameraSettings] | None = None,
) -> Outputs:
    """`run_passes` for any (camera, frame id, captured_at ms, JPEG) records, in order per camera."""
    topics = Topics.named(f"bench-sightings-{uuid.uuid4().hex[:8]}")
    wanted = [topics.frames, topics.plates, topics.dead_letters, topics.sightings]
    create_topics(bootstrap_servers, wanted + ([topics.alerts] if watchlist is not None else []), partitions)
    if watchlist is not None:
        try:
            write_changes(bootstrap_servers, topics.watchlist, watchlist)
        except WatchlistStoreError as error:
            raise SightingsBenchError(f"watch list not written: {error}") from error
    if camera_settings:
        encoded = [encode_settings(camera, settings) for camera, settings in sorted(camera_settings.items())]
        try:
            write_compacted(bootstrap_servers, topics.cameras, encoded)
        except CompactedTopicError as error:
            raise SightingsBenchError(f"camera settings not written: {error}") from error
    run_id = topics.frames.split(".")[0]
    with tempfile.TemporaryDirectory(prefix="stream-worker-bench-sightings-") as scratch:
        log_dir = Path(scratch)
        common = [
            "--bootstrap-servers",
            bootstrap_servers,
            "--session-timeout-ms",
            "6000",
            "--metrics-host",
            "127.0.0.1",
            *(["--local-broker"] if local_broker else []),
        ]
        worker_args = ["--triton-url", triton_url, "--group-id", f"{run_id}-worker"]
        worker_args += ["--triton-timeout-s", "600", "--input-topic", topics.frames]
        worker_args += ["--output-topic", topics.plates, "--dlq-topic", topics.dead_letters]
        worker_args += ["--cameras-topic", topics.cameras]
        worker = Service("run", [*common, *worker_args], log_dir)
        sightings = Service(
            "sightings",
            # Silence only for cameras that stop: each camera here ends with a closing frame instead.
            [*common, "--group-id", f"{run_id}-sightings", "--input-topic", topics.plates,
             "--output-topic", topics.sightings, "--silence-s", "600", *sightings_args],
            log_dir,
        )  # fmt: skip
        services = [worker, sightings]
        if watchlist is not None:
            alerts_args = ["--group-id", f"{run_id}-alerts", "--input-topic", topics.plates]
            alerts_args += ["--output-topic", topics.alerts, "--watchlist-topic", topics.watchlist]
            alerts_args += [
                "--sightings-topic",
                topics.sightings,
                "--sightings-group-id",
                f"{run_id}-alerts-s",
            ]
            services.append(Service("alerts", [*common, *alerts_args], log_dir))
        try:
            for service in services:
                service.wait_ready()
            published = _publish(bootstrap_servers, topics.frames, frames, local_broker)
            with_alerts = watchlist is not None
            outputs = _collect(bootstrap_servers, topics, set(published), services, timeout_s, with_alerts)
            outputs.published = published
            return outputs
        finally:
            for service in services:
                service.stop()


def _publish(
    bootstrap_servers: str, topic: str, frames: Iterator[tuple[str, str, int, bytes]], local_broker: bool
) -> dict[str, float]:
    """Frame id -> when it was handed to the producer (epoch s)."""
    producer = Producer(producer_config(bootstrap_servers, {"linger.ms": "20"}, local_broker))
    frame_ids = {}
    for camera, frame_id, captured_ms, jpeg in frames:
        headers = [
            ("camera_id", camera.encode()),
            ("frame_id", frame_id.encode()),
            ("captured_at", str(captured_ms).encode()),
        ]
        while True:
            try:
                producer.produce(topic, value=jpeg, key=camera.encode(), headers=headers)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        frame_ids[frame_id] = time.time()
    if producer.flush(120) != 0:
        raise SightingsBenchError("frames not delivered to the broker")
    return frame_ids


def _collect(
    bootstrap_servers: str,
    topics: Topics,
    frame_ids: set[str],
    services: list[Service],
    timeout_s: float,
    with_alerts: bool = False,
) -> Outputs:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    outputs = Outputs()
    try:
        metadata = consumer.list_topics(timeout=30).topics
        wanted = [topics.plates, topics.dead_letters, topics.sightings]
        wanted += [topics.alerts] if with_alerts else []
        consumer.assign(
            [TopicPartition(t, p, OFFSET_BEGINNING) for t in wanted for p in sorted(metadata[t].partitions)]
        )
        deadline = time.monotonic() + timeout_s
        settled_at: float | None = None
        while True:
            for message in consumer.consume(500, 0.5):
                if message.error() is not None:
                    continue
                if message.topic() == topics.plates:
                    event = orjson.loads(message.value())
                    outputs.events[event["frame_id"]] = event
                elif message.topic() == topics.sightings:
                    outputs.sightings.append(orjson.loads(message.value()))
                    settled_at = None
                elif message.topic() == topics.alerts:
                    outputs.alerts.append(orjson.loads(message.value()))
                    settled_at = None
                else:
                    outputs.dead_letters.add(dict(message.headers() or ()).get("frame_id", b"").decode())
            for service in services:
                service.check()
            done = frame_ids <= set(outputs.events) | outputs.dead_letters
            if done:
                settled_at = settled_at or time.monotonic()
                if time.monotonic() - settled_at > SETTLE_S:
                    return _deduplicated(outputs)
            if time.monotonic() > deadline:
                missing = len(frame_ids - set(outputs.events) - outputs.dead_letters)
                raise SightingsBenchError(f"timed out with {missing} frames without an event")
    finally:
        consumer.close()


def _deduplicated(outputs: Outputs) -> Outputs:
    seen: dict[str, dict[str, Any]] = {}
    for sighting in outputs.sightings:
        seen.setdefault(sighting["sighting_id"], sighting)
    outputs.sightings = list(seen.values())
    return outputs


# --- the command -----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench sightings",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: LPR_WEIGHTS_DIR=../shared/weights stream-worker bench sightings "
        "--report reports/sightings.json",
    )
    p.add_argument("--scenes", type=Path, default=DEFAULT_SCENES, help="Labelled photo folder (labels.json).")
    p.add_argument("--frames-per-pass", type=int, default=8, help="Frames of each photo's pass.")
    p.add_argument("--fps", type=float, default=10.0, help="Frames per second within a pass (capture time).")
    p.add_argument("--cameras", type=int, default=4, help="Simulated cameras the passes are spread over.")
    p.add_argument("--partitions", type=int, default=4, help="Partitions of the benchmark topics.")
    p.add_argument("--limit", type=int, default=None, help="Only the first N labelled photos.")
    p.add_argument("--seed", type=int, default=14, help="Seed of the passes' drift and noise.")
    defaults = Difficulty()
    p.add_argument(
        "--min-scale", type=float, default=defaults.min_scale, help="Plates' smallest size in a pass."
    )
    p.add_argument(
        "--jpeg-quality",
        type=int,
        nargs=2,
        default=list(defaults.jpeg_quality),
        help="Range of frame qualities.",
    )
    p.add_argument("--max-blur", type=int, default=defaults.max_blur_px, help="Longest motion blur, pixels.")
    p.add_argument("--bootstrap-servers", default=None, help="Use this Kafka instead of the local broker.")
    p.add_argument("--triton-url", default=None, help="Use this Triton instead of starting the local one.")
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    p.add_argument(
        "--alerts",
        action="store_true",
        help="Also run `stream-worker alerts` with half of the labelled plates (by --seed) on a watch "
        "list, score its alerts and replay the reads offline at several matching tolerances.",
    )
    p.add_argument(
        "--masks",
        action="store_true",
        help="Give each pass a camera of its own (--cameras is ignored) whose settings mask the frame "
        "outside the pass's plates' track (grown by half a plate each side).",
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.frames_per_pass < 2 or args.cameras < 1 or args.fps <= 0:
        print("error: --frames-per-pass >= 2, --cameras >= 1 and --fps > 0 are needed", file=sys.stderr)
        return 2
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    started = time.monotonic()
    try:
        difficulty = Difficulty(args.min_scale, tuple(args.jpeg_quality), args.max_blur)
        passes = scene_passes(args.scenes, args.frames_per_pass, args.limit, args.seed, difficulty)
        cameras = len(passes) if args.masks else args.cameras
        planned = plan(passes, cameras, args.fps, int(time.time() * 1000))
        settings = {item.camera_id: pass_settings(item.scene) for item in planned} if args.masks else None
        entries = alert_scoring.watch_entries(planned, args.seed) if args.alerts else None
        with contextlib.ExitStack() as stack:
            bootstrap = args.bootstrap_servers or _local_broker(stack)
            triton_url = args.triton_url or _local_triton(stack, args.repository)
            local = args.bootstrap_servers is None
            outputs = run_passes(
                bootstrap,
                triton_url,
                planned,
                args.fps,
                args.partitions,
                local_broker=local,
                watchlist=entries,
                camera_settings=settings,
            )
    except SightingsBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    figures = score(planned, outputs)
    report = {
        "scenario": "sightings",
        "command": "stream-worker bench sightings " + " ".join(argv),
        "duration_s": round(time.monotonic() - started, 1),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "passes": len(planned),
        "frame_count": sum(len(p.frame_ids) for p in planned),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "load_threshold": environment.IDLE_LOAD,
        "busy": busy,
        "masks": None
        if settings is None
        else {"cameras": len(settings), "polygons": sum(len(s.masks) for s in settings.values())},
        **figures,
    }
    if entries is not None:
        listed = {entry.plate for entry in entries}
        report["alerts"] = {
            "listed": sorted(listed),
            "service": alert_scoring.score_alerts(planned, outputs, listed),
            "tolerances": alert_scoring.tolerance_table(planned, outputs, entries),
        }
    print(render(report))
    if "alerts" in report:
        print("\n" + "\n".join(alert_scoring.render_alerts(report["alerts"])))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0


def _local_broker(stack: contextlib.ExitStack) -> str:
    from stream_worker.launchers.broker import LocalBroker

    broker = stack.enter_context(LocalBroker())
    return str(broker.bootstrap_servers)


def _local_triton(stack: contextlib.ExitStack, repository: Path) -> str:
    from stream_worker.launchers.triton import LocalTriton, TritonLaunchError
    from stream_worker.nets.errors import ModelPrepareError
    from stream_worker.nets.prepare import prepare_models
    from stream_worker.nets.weights import default_weights_dir

    try:
        prepare_models(default_weights_dir(), repository)
        triton = stack.enter_context(LocalTriton(repository))
    except (ModelPrepareError, TritonLaunchError) as error:
        raise SightingsBenchError(str(error)) from error
    return str(triton.grpc_url)
