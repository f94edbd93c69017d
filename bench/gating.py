"""`stream-worker bench gating`: what motion gating saves on a long live camera, both arms side by side.

One H.264 1080p 25 fps stream (bench/camera_stream.py: the clips of ../shared/videos and passes made
from the evalset's photos, vehicles in view `--in-view` of the time, default 10 minutes) is read by
the camera connector as a file source paced by its own clock, sampled to `--fps`, in two arms at
once, each with a stack of its own (broker, Triton, worker, sightings service, connector), so that
each process's CPU belongs to one arm: `gated` (the camera's settings have motion gating on) and
`ungated` (every sampled frame published and examined). Printed per arm: frames published and
their bytes on the frames topic, CPU seconds of each process, CPU per camera-hour of broker +
Triton + worker (the target: gated at most 1/4 of ungated), the connector's own, how many such
cameras one 2-core host keeps up with all in, and each labelled plate's pass read exactly or not.

`--offline` runs no server (and needs no idle machine): the stream decoded and sampled as the
connector does, each frame through the connector's gate, hold and marker thinning, and its JPEG
encoded at the camera's quality; printed per arm: frames and static markers published, the frames
topic's bytes (headers estimated), and per pass the frames in view and how many are published.
Minutes of one core; what it cannot say is the CPU, nor whether the plates are read.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from bench import environment
from bench.camera_stream import VERSION, PlannedView, build
from bench.cpu import group_cpu_s
from bench.report import format_table, write_json
from bench.sightings import DEFAULT_SCENES, REPO_ROOT, Service, SightingsBenchError
from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
from stream_worker.contracts.topics import CAMERA_STATUS, CAMERAS, FRAMES, FRAMES_DLQ, PLATES, SIGHTINGS
from stream_worker.service.compacted import side_consumer

ARMS = ("gated", "ungated")
CAMERA = "gate-1"
HOST_CORES = 2
WINDOW_MARGIN_S = 3.0  # a sighting belongs to a pass when it overlaps the pass widened by this
READY_TIMEOUT_S = 600.0
RECORD_OVERHEAD_BYTES = (
    110  # --offline: key and headers of a record, about (camera id, frame id, captured_at)
)


@dataclass
class Arm:
    name: str
    bootstrap: str
    triton_url: str
    pgids: dict[str, int] = field(default_factory=dict)  # process -> its process group
    cpu_start: dict[str, float] = field(default_factory=dict)
    cpu_end: dict[str, float] = field(default_factory=dict)
    services: list[Service] = field(default_factory=list)

    def cpu(self) -> dict[str, float]:
        return {name: group_cpu_s(pgid) for name, pgid in self.pgids.items()}


def stream_file(args: argparse.Namespace) -> tuple[Path, list[PlannedView]]:
    """The stream of these settings, made once and kept in the temporary folder."""
    key = hashlib.sha256(f"{VERSION}:{args.minutes}:{args.in_view}:{args.seed}".encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / "stream-worker-bench-gating"
    folder.mkdir(exist_ok=True)
    path, plan = folder / f"{key}.mp4", folder / f"{key}.json"
    if not (path.exists() and plan.exists()):
        print(f"making the {args.minutes:g}-minute stream (once; kept as {path}) ...", flush=True)
        views = build(
            path.with_suffix(".part.mp4"), args.videos, args.scenes, args.minutes, args.in_view, args.seed
        )
        path.with_suffix(".part.mp4").rename(path)
        plan.write_bytes(orjson.dumps([view.to_json() for view in views]))
    return path, [PlannedView(**item) for item in orjson.loads(plan.read_bytes())]


def settings_of(arm: str, path: Path, fps: float) -> CameraSettings:
    source = CameraSource(url=str(path), fps=fps)
    return CameraSettings(source=source, motion=MotionSettings() if arm == "gated" else None)


def start_arm(name: str, stack: contextlib.ExitStack, repository: Path, log_dir: Path) -> Arm:
    from stream_worker.launchers.broker import LocalBroker, create_topics
    from stream_worker.launchers.triton import LocalTriton

    broker = stack.enter_context(LocalBroker())
    triton = stack.enter_context(LocalTriton(repository))
    arm = Arm(name, str(broker.bootstrap_servers), str(triton.grpc_url))
    create_topics(arm.bootstrap, [topic.name for topic in (FRAMES, PLATES, FRAMES_DLQ, SIGHTINGS)], 1)
    arm.pgids = {"broker": int(broker.pid or 0), "triton": int(triton.pid or 0)}
    common = ["--bootstrap-servers", arm.bootstrap, "--metrics-host", "127.0.0.1", "--local-broker"]
    arm_logs = log_dir / name
    arm_logs.mkdir()
    worker = Service("run", [*common, "--triton-url", arm.triton_url, "--triton-timeout-s", "600"], arm_logs)
    sightings = Service("sightings", [*common, "--silence-s", "10"], arm_logs)
    connector = Service("connect", common, arm_logs)
    arm.services = [worker, sightings, connector]
    for service in arm.services:
        stack.callback(service.stop)
    for service in arm.services:
        service.wait_ready(READY_TIMEOUT_S)
    arm.pgids |= {"worker": worker.pid, "sightings": sightings.pid, "connector": connector.pid}
    return arm


def read_topic(bootstrap: str, topic: str, quiet_s: float = 2.0) -> list[Any]:
    """Every record of `topic` (one partition), read until none came for `quiet_s`: not bounded by
    the high watermark, which the local broker has been seen to give one short."""
    consumer = side_consumer(bootstrap, None, "bench")
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        messages: list[Any] = []
        deadline = time.monotonic() + 120
        quiet_until = time.monotonic() + quiet_s
        while time.monotonic() < min(quiet_until, deadline):
            batch = [m for m in consumer.consume(1000, 0.5) if m.error() is None]
            if batch:
                messages += batch
                quiet_until = time.monotonic() + quiet_s
        return messages
    finally:
        consumer.close()


def records_when_ended(arm: Arm) -> int | None:
    """The records (frames and static markers) the arm's connector had acknowledged by the broker
    when its camera ended, from its status; None while the camera is not ended. (Not the frames
    topic's high watermark: the local broker gives the last batch's, not the last record's.)"""
    from stream_worker.cameras.status import decode_status
    from stream_worker.service.compacted import read_compacted

    snapshot = read_compacted(arm.bootstrap, CAMERA_STATUS.name, decode_status, {}, 30.0)
    status = snapshot.values.get(CAMERA)
    if status is None or status.state != "ended":
        return None
    return status.frames_published + (status.static_markers or 0)


def wait_done(arms: Sequence[Arm], stream_s: float) -> None:
    """Until each arm's camera has ended, every frame has its event and the sightings settled."""
    deadline = time.monotonic() + stream_s * 3 + 600
    pending = list(arms)
    while pending:
        time.sleep(5)
        for arm in list(pending):
            for service in arm.services:
                service.check()
            frames = records_when_ended(arm)
            if frames is None:
                continue
            # Not the frames read back: that would charge the broker's CPU, inside the measured
            # window, with serving this benchmark every frame again. The events are small.
            events = len(read_topic(arm.bootstrap, PLATES.name))
            if frames and events >= frames:
                time.sleep(15)  # the sightings service's --silence-s closes the last pass
                arm.cpu_end = arm.cpu()
                pending.remove(arm)
        if time.monotonic() > deadline:
            raise SightingsBenchError(f"{', '.join(a.name for a in pending)} did not finish in time")


def score(arm: Arm, views: Sequence[PlannedView], stream_s: float) -> dict[str, Any]:
    frames = read_topic(arm.bootstrap, FRAMES.name)
    anchor = _captured_s(frames[0]) if frames else 0.0  # stream time 0: the first frame is published
    sightings = [orjson.loads(m.value()) for m in read_topic(arm.bootstrap, SIGHTINGS.name)]
    rows, owned = [], set()
    for view in views:
        start, end = anchor + view.start_s - WINDOW_MARGIN_S, anchor + view.end_s + WINDOW_MARGIN_S
        near = [s for s in sightings if _overlaps(s, start, end)]
        owned |= {s["sighting_id"] for s in near}
        for text in view.texts:
            rows.append({"pass": view.name, "text": text, "read": any(s["text"] == text for s in near)})
    cpu = {name: round(arm.cpu_end[name] - arm.cpu_start[name], 1) for name in arm.pgids}
    pipeline = cpu["broker"] + cpu["triton"] + cpu["worker"]
    all_in = sum(cpu.values())
    per_hour = 3600 / stream_s
    return {
        "frames": sum(1 for m in frames if m.value()),
        "static_markers": sum(1 for m in frames if not m.value()),
        "frames_mb": round(sum(_record_bytes(m) for m in frames) / 1e6, 2),
        "cpu_s": cpu,
        "pipeline_cpu_s_per_camera_hour": round(pipeline * per_hour),
        "connector_cpu_s_per_camera_hour": round(cpu["connector"] * per_hour),
        "all_in_cpu_s_per_camera_hour": round(all_in * per_hour),
        "cameras_per_host": round(HOST_CORES * 3600 / (all_in * per_hour), 1) if all_in else None,
        "plates": len(rows),
        "plates_read": sum(row["read"] for row in rows),
        "sightings": len(sightings),
        "sightings_outside_passes": len([s for s in sightings if s["sighting_id"] not in owned]),
        "rows": rows,
    }


def _record_bytes(message: Any) -> int:
    """What a record puts on the topic: value, key and headers."""
    headers = sum(len(name) + len(value or b"") for name, value in message.headers() or ())
    return len(message.value() or b"") + len(message.key() or b"") + headers


def _captured_s(message: Any) -> float:
    value = dict(message.headers() or ())["captured_at"].decode()
    from datetime import datetime

    return float(value) / 1000 if value.isdigit() else datetime.fromisoformat(value).timestamp()


def _overlaps(sighting: dict[str, Any], start: float, end: float) -> bool:
    from datetime import datetime

    first = datetime.fromisoformat(sighting["first_seen"]).timestamp()
    last = datetime.fromisoformat(sighting["last_seen"]).timestamp()
    return first <= end and last >= start


def gate_offline(
    frames: Sequence[tuple[float, Any]], settings: CameraSettings, marker_interval_s: float
) -> list[tuple[int, bool]]:
    """(index, examined) of every record the connector publishes for `frames` ((stream time, reduced
    grey) in order), by its own pieces: the motion gate, the pre-roll hold, the marker thinning."""
    from stream_worker.cameras.motion import CameraMotion
    from stream_worker.connector.hold import MarkerThinner, StaticHold
    from stream_worker.connector.reader import MAX_PRE_ROLL_FRAMES

    camera = CameraMotion.for_camera(settings)
    if camera is None or settings.motion is None or settings.source is None:
        return [(index, True) for index in range(len(frames))]
    pre_roll_s = settings.motion.pre_roll_s
    hold: StaticHold[int] = StaticHold(
        pre_roll_s, min(MAX_PRE_ROLL_FRAMES, int(pre_roll_s * settings.source.fps) + 1)
    )
    thinner: MarkerThinner[int] = MarkerThinner(marker_interval_s)
    out: list[tuple[int, bool]] = []
    for index, (t, gray) in enumerate(frames):
        observation = camera.observe(t, gray)
        for item, examined in hold.admit(t, index, observation.decision, observation.unchanged):
            out += thinner.take(frames[item][0], item, examined)
    for item, examined in hold.clear():
        out += thinner.take(frames[item][0], item, examined)
    return out + thinner.flush()


def offline(path: Path, views: Sequence[PlannedView], fps: float, marker_interval_s: float) -> dict[str, Any]:
    """Both arms' records over the stream, without servers (see the module)."""
    import av

    from stream_worker.cameras.motion import MIN_WIDTH
    from stream_worker.connector.encoding import JpegEncoder
    from stream_worker.connector.sampler import FpsSampler, StreamTime

    gated = settings_of("gated", path, fps)
    assert gated.source is not None
    encoder, sampler = JpegEncoder(gated.source.jpeg_quality), FpsSampler(fps)
    frames: list[tuple[float, Any]] = []
    sizes: list[int] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        times = StreamTime(1.0 / float(stream.average_rate or fps))
        time_base = float(stream.time_base) if stream.time_base else None
        for frame in container.decode(stream):
            t = times.of(frame.pts, time_base)
            if not sampler.keep(t):
                continue
            factor = max(1, frame.width // MIN_WIDTH)
            gray = frame.reformat(width=frame.width // factor, height=frame.height // factor, format="gray")
            frames.append((t, gray.to_ndarray()))
            sizes.append(len(encoder.encode(frame)))
    arms = {}
    for arm in ARMS:
        records = gate_offline(frames, settings_of(arm, path, fps), marker_interval_s)
        examined = {index for index, is_examined in records if is_examined}
        image_bytes = sum(sizes[index] for index in examined)
        passes, in_view_bytes = [], 0
        for view in views:
            in_view = [i for i, (t, _) in enumerate(frames) if view.start_s <= t < view.end_s]
            in_view_bytes += sum(sizes[i] for i in examined.intersection(in_view))
            passes.append(
                {"pass": view.name, "in_view": len(in_view), "published": len(examined.intersection(in_view))}
            )
        arms[arm] = {
            "frames": len(examined),
            "static_markers": len(records) - len(examined),
            "frames_mb": round((image_bytes + RECORD_OVERHEAD_BYTES * len(records)) / 1e6, 2),
            "in_view_mb": round(in_view_bytes / 1e6, 2),  # the images of frames with a vehicle in view
            "passes": passes,
        }
    return arms


def render_offline(arms: dict[str, Any]) -> str:
    table = [{"arm": name, **{k: v for k, v in arms[name].items() if k != "passes"}} for name in ARMS]
    gated, ungated = arms["gated"], arms["ungated"]
    rows = [
        {**row, "ungated": other["published"]}
        for row, other in zip(gated["passes"], ungated["passes"], strict=True)
    ]
    return "\n".join(
        [
            format_table(table, ["arm", "frames", "static_markers", "frames_mb", "in_view_mb"]),
            "",
            "vehicle passes: sampled frames in view, and how many the gated arm publishes:",
            format_table(rows, ["pass", "in_view", "published", "ungated"]),
            "",
            f"gated / ungated frames-topic bytes {_ratio(gated, ungated, 'frames_mb')} (target <= 0.25); "
            "the frames with a vehicle in view alone are "
            f"{_ratio(ungated, ungated, 'in_view_mb', 'frames_mb')}"
            " of the ungated arm's (a gate that publishes all of them cannot go under that); CPU and "
            "plates read: run without --offline on an idle machine",
        ]
    )


def render(report: dict[str, Any]) -> str:
    arms = report["arms"]
    columns = [
        "arm",
        "frames",
        "frames_mb",
        "pipeline_cpu_s_per_camera_hour",
        "connector_cpu_s_per_camera_hour",
    ]
    columns += ["all_in_cpu_s_per_camera_hour", "cameras_per_host", "plates_read", "sightings"]
    table = [{"arm": name, **{k: v for k, v in arms[name].items() if k in columns}} for name in ARMS]
    for row in table:
        row["plates_read"] = f"{row['plates_read']}/{arms[row['arm']]['plates']}"
    gated, ungated = arms["gated"], arms["ungated"]
    cpu_rows = [{"arm": name, **arms[name]["cpu_s"]} for name in ARMS]
    lines = [
        f"{report['minutes']:g}-minute 1080p25 stream, {report['views']} vehicle passes "
        f"({report['in_view']:.0%} of the time), sampled to {report['fps']:g} fps; load average "
        f"before/after {report['load_average']['before']} / {report['load_average']['after']}",
        "",
        format_table(table, columns),
        "",
        "CPU seconds over the stream, by process:",
        format_table(cpu_rows, ["arm", "connector", "broker", "triton", "worker", "sightings"]),
        "",
        "gated / ungated: broker + Triton + worker CPU "
        f"{_ratio(gated, ungated, 'pipeline_cpu_s_per_camera_hour')} (target <= 0.25), "
        f"frames-topic bytes {_ratio(gated, ungated, 'frames_mb')} (target <= 0.25); "
        f"plates read {gated['plates_read']} vs {ungated['plates_read']} of {gated['plates']}",
    ]
    missed = [row for row in gated["rows"] if not row["read"]]
    if missed:
        lines += ["", "plates the gated arm did not read:", format_table(missed, ["pass", "text"])]
    return "\n".join(lines)


def _ratio(a: dict[str, Any], b: dict[str, Any], key: str, b_key: str | None = None) -> str:
    b_key = b_key or key
    return f"{a[key] / b[b_key]:.3f}" if b[b_key] else "-"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench gating",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: LPR_WEIGHTS_DIR=../shared/weights stream-worker bench gating --report r.json",
    )
    p.add_argument("--minutes", type=float, default=10.0, help="Length of the stream.")
    p.add_argument("--fps", type=float, default=10.0, help="Frames per second the connector samples.")
    p.add_argument("--in-view", type=float, default=0.15, help="Share of the time a vehicle is in view.")
    p.add_argument("--seed", type=int, default=27)
    p.add_argument("--videos", type=Path, default=REPO_ROOT.parent / "shared" / "videos")
    p.add_argument("--scenes", type=Path, default=DEFAULT_SCENES, help="Labelled photos (evalset/scenes).")
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    p.add_argument(
        "--offline",
        action="store_true",
        help="No servers: the connector's gate over the stream, frames, markers and bytes per arm.",
    )
    p.add_argument(
        "--static-marker-interval-s",
        type=float,
        default=1.0,
        help="--offline: the connector's --static-marker-interval-s (0: a marker per static frame).",
    )
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    path, views = stream_file(args)
    if args.offline:
        print(render_offline(offline(path, views, args.fps, args.static_marker_interval_s)))
        return 0
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    started = time.monotonic()
    stream_s = args.minutes * 60
    try:
        from stream_worker.cameras.records import encode_settings
        from stream_worker.nets.prepare import prepare_models
        from stream_worker.nets.weights import default_weights_dir
        from stream_worker.service.compacted import write_compacted

        prepare_models(default_weights_dir(), args.repository)
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-gating-") as logs:
            arms = [start_arm(name, stack, args.repository, Path(logs)) for name in ARMS]
            for arm in arms:
                arm.cpu_start = arm.cpu()
                write_compacted(
                    arm.bootstrap,
                    CAMERAS.name,
                    [encode_settings(CAMERA, settings_of(arm.name, path, args.fps))],
                )
            print(f"both arms reading the stream ({stream_s:.0f} s, paced by its clock) ...", flush=True)
            wait_done(arms, stream_s)
            figures = {arm.name: score(arm, views, stream_s) for arm in arms}
    except SightingsBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = {
        "scenario": "gating",
        "command": "stream-worker bench gating " + " ".join(argv),
        "duration_s": round(time.monotonic() - started, 1),
        "minutes": args.minutes,
        "fps": args.fps,
        "in_view": args.in_view,
        "views": len(views),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "busy": busy,
        "arms": figures,
    }
    print(render(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0
