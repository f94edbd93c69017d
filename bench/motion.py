"""`stream-worker bench motion`: what the motion gate (stream_worker/cameras/motion.py) leaves out.

Over every clip of ../shared/videos (decoded with PyAV, reduced to grey as the connector does),
per clip: the frames the gate calls static (the connector would not publish them, the worker would
not examine them), and whether each frame where the in-process recognizer (bench/limit.py's
`InProcessPipeline`: the model repository's own code and ONNX files, no Triton) reads the clip's
labelled plate (its file name) is kept: examined by the worker's gate, published by the connector's
(examined or handed back as pre-roll). `--sweep` prints the totals over a grid of settings instead.
`--decode` measures, on 1920x1080 JPEGs made at run time (the stream bench's frames and frames of
the clips), the CPU of getting the worker's small grey copy out of a JPEG, per candidate decoder.
`--worker FRAMES` drains FRAMES still frames through the broker, Triton and the worker twice, with
motion gating and without, and prints the CPU per frame of each (a static frame's cost).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import environment
from bench.report import format_table

REPO_ROOT = Path(__file__).resolve().parent.parent
VIDEOS = REPO_ROOT.parent / "shared" / "videos"
NOISE_SIGMA = 3.0  # grey levels of sensor noise on the lead-in's still frames
JPEG_QUALITY = 85  # as bench/frames.py: typical of IP cameras
SWEEP = {
    "pixel_threshold": (15, 25, 40),
    "min_changed_share": (0.001, 0.002, 0.005, 0.01),
    "background_s": (2.0, 5.0, 10.0),
}


@dataclass(frozen=True)
class Clip:
    name: str
    plate: str  # the labelled plate: the file name's last part
    times: list[float]  # stream seconds, the lead-in first
    grays: list[np.ndarray]  # reduced, as the gate sees them
    jpegs: list[bytes]  # the clip's frames at full size, for the recognizer (not the lead-in's)
    lead: int  # frames of lead-in before the clip's first


def load_clips(folder: Path, lead_in_s: float = 0.0, seed: int = 0) -> list[Clip]:
    """Every clip of `folder`, after `lead_in_s` seconds of its first frame standing still as a
    camera sends it: each frame with its own sensor noise (Gaussian, sigma NOISE_SIGMA grey
    levels) and its own JPEG compression (quality JPEG_QUALITY), so that only noise changes."""
    import av
    import cv2

    from stream_worker.cameras.motion import reduce

    rng = np.random.default_rng(seed)
    clips = []
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in (".mp4", ".mov", ".mkv", ".avi"):
            continue
        times, grays, jpegs = [], [], []
        with av.open(str(path)) as container:
            rate = float(container.streams.video[0].average_rate or 25)
            for frame in container.decode(video=0):
                times.append(float(frame.time or 0.0))
                grays.append(reduce(frame.to_ndarray(format="gray")))
                image = frame.to_ndarray(format="bgr24")
                jpegs.append(
                    cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])[1].tobytes()
                )
                if len(jpegs) == 1:
                    first = image
        lead = round(lead_in_s * rate)
        lead_grays = []
        for _ in range(lead):
            noisy = np.clip(first + rng.normal(0, NOISE_SIGMA, first.shape), 0, 255).astype(np.uint8)
            jpeg = cv2.imencode(".jpg", noisy, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])[1]
            lead_grays.append(reduce(cv2.imdecode(jpeg, cv2.IMREAD_GRAYSCALE)))
        lead_times = [times[0] - (lead - i) / rate for i in range(lead)]
        name, plate = path.stem, path.stem.rsplit("-", 1)[-1]
        clips.append(Clip(name, plate, lead_times + times, lead_grays + grays, jpegs, lead))
    return clips


def readable(clips: Sequence[Clip]) -> dict[str, set[int]]:
    """Per clip, the frames where the in-process recognizer reads the labelled plate exactly."""
    from bench.limit import InProcessPipeline

    pipeline = InProcessPipeline(REPO_ROOT / "model_repository")
    found = {}
    for clip in clips:
        texts = [
            t
            for start in range(0, len(clip.jpegs), 8)
            for t in pipeline.recognize(clip.jpegs[start : start + 8])
        ]
        found[clip.name] = {clip.lead + i for i, frame_texts in enumerate(texts) if clip.plate in frame_texts}
    return found


def gate_clip(clip: Clip, motion: Any, background_s: float) -> dict[str, Any]:
    """Decisions over one clip: the frames examined (worker) and published (connector)."""
    from stream_worker.cameras.motion import CameraMotion
    from stream_worker.connector.hold import StaticHold
    from stream_worker.connector.reader import MAX_PRE_ROLL_FRAMES

    camera = CameraMotion(motion, (), background_s)
    ring: StaticHold[int] = StaticHold(motion.pre_roll_s, MAX_PRE_ROLL_FRAMES)
    examined: set[int] = set()
    published: set[int] = set()
    shares: list[float] = []
    cpu = time.process_time()
    for index, (t, gray) in enumerate(zip(clip.times, clip.grays, strict=True)):
        observation = camera.observe(t, gray)
        if observation.decision.examined:
            examined.add(index)
        released = ring.admit(t, index, observation.decision, observation.unchanged)
        published.update(item for item, examined in released if examined)
        shares.append(observation.share or 0.0)
    cpu_ms = (time.process_time() - cpu) * 1000 / len(clip.grays)
    return {"examined": examined, "published": published, "shares": shares, "gate_cpu_ms": cpu_ms}


def clip_rows(
    clips: Sequence[Clip], plates: dict[str, set[int]] | None, motion: Any, background_s: float
) -> list[dict[str, Any]]:
    """Per clip: the share of static frames in the lead-in (only noise changes there) and in the
    clip (worker: not examined; connector: not published), and of the frames where the plate is
    read, how many the worker examines and the connector publishes (the pass is read if any)."""
    rows = []
    for clip in clips:
        gated = gate_clip(clip, motion, background_s)
        count = len(clip.grays) - clip.lead
        in_clip = range(clip.lead, len(clip.grays))
        row: dict[str, Any] = {
            "clip": clip.name,
            "frames": count,
            "seconds": round(clip.times[-1] - clip.times[clip.lead], 2),
            "gray": f"{clip.grays[-1].shape[1]}x{clip.grays[-1].shape[0]}",
            "lead_in_frames": clip.lead,
            "static_lead_in": round(1 - len(gated["examined"] - set(in_clip)) / clip.lead, 3)
            if clip.lead
            else None,
            "static_worker": round(1 - len(gated["examined"] & set(in_clip)) / count, 3),
            "static_connector": round(1 - len(gated["published"] & set(in_clip)) / count, 3),
            "share_p50": round(float(np.median(gated["shares"][clip.lead :])), 4),
            "gate_cpu_ms": round(gated["gate_cpu_ms"], 3),
        }
        if plates is not None:
            read = plates[clip.name]
            row["plate_frames"] = len(read)
            row["plate_examined"] = len(read & gated["examined"])
            row["plate_published"] = len(read & gated["published"])
        rows.append(row)
    return rows


def sweep_rows(clips: Sequence[Clip], plates: dict[str, set[int]] | None, base: Any) -> list[dict[str, Any]]:
    rows = []
    for threshold, share, background_s in itertools.product(*SWEEP.values()):
        motion = base.model_copy(update={"pixel_threshold": threshold, "min_changed_share": share})
        per_clip = clip_rows(clips, plates, motion, background_s)
        frames = sum(r["frames"] for r in per_clip)
        row: dict[str, Any] = {
            "pixel_threshold": threshold,
            "min_changed_share": share,
            "background_s": background_s,
            "static_lead_in": round(sum(r["static_lead_in"] or 0 for r in per_clip) / len(per_clip), 3),
            "static_worker": round(sum(r["static_worker"] * r["frames"] for r in per_clip) / frames, 3),
            "static_connector": round(sum(r["static_connector"] * r["frames"] for r in per_clip) / frames, 3),
        }
        for r in per_clip:
            row["static_" + "_".join(r["clip"].split("-")[:2])] = r["static_worker"]
        if plates is not None:
            row["plate_frames"] = sum(r["plate_frames"] for r in per_clip)
            row["plate_examined"] = sum(r["plate_examined"] for r in per_clip)
            row["plate_published"] = sum(r["plate_published"] for r in per_clip)
            row["passes_read"] = sum(r["plate_examined"] > 0 for r in per_clip)
        rows.append(row)
    return rows


def decoders() -> dict[str, Callable[[bytes], np.ndarray]]:
    """Candidates for the worker's small grey copy of a JPEG (those importable here)."""
    import cv2

    from stream_worker.cameras.thumbnails import gray_thumbnail

    found: dict[str, Callable[[bytes], np.ndarray]] = {
        "thumbnails.gray_thumbnail (simplejpeg, grey, DCT-scaled)": gray_thumbnail,
        "cv2 IMREAD_REDUCED_GRAYSCALE_8": lambda j: cv2.imdecode(
            np.frombuffer(j, np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_8
        ),
        "cv2 IMREAD_REDUCED_GRAYSCALE_4": lambda j: cv2.imdecode(
            np.frombuffer(j, np.uint8), cv2.IMREAD_REDUCED_GRAYSCALE_4
        ),
    }
    try:
        import io

        from PIL import Image

        def pillow(jpeg: bytes) -> np.ndarray:
            image = Image.open(io.BytesIO(jpeg))
            image.draft("L", (image.width // 8, image.height // 8))
            return np.asarray(image.convert("L"))

        found["Pillow draft('L', 1/8)"] = pillow
    except ImportError:
        pass
    found["cv2 full colour decode (for scale)"] = lambda j: cv2.imdecode(
        np.frombuffer(j, np.uint8), cv2.IMREAD_COLOR
    )
    return found


def decode_rows(jpegs: Sequence[bytes], seconds: float = 2.0) -> list[dict[str, Any]]:
    import cv2

    from stream_worker.cameras.motion import CameraMotion
    from stream_worker.contracts.cameras import MotionSettings

    cv2.setNumThreads(1)
    rows = []
    for name, decode in decoders().items():
        shape = decode(jpegs[0]).shape
        count, cpu, clock = 0, time.process_time(), time.perf_counter()
        while time.perf_counter() - clock < seconds:
            for jpeg in jpegs:
                decode(jpeg)
                count += 1
        rows.append(
            {
                "decoder": name,
                "output": "x".join(str(n) for n in shape),
                "cpu_ms_per_frame": round((time.process_time() - cpu) * 1000 / count, 3),
            }
        )
    from stream_worker.cameras.thumbnails import gray_thumbnail

    camera = CameraMotion(MotionSettings())
    count, cpu, clock = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - clock < seconds:
        for jpeg in jpegs:
            camera.observe(count * 0.1, gray_thumbnail(jpeg))
            count += 1
    rows.append(
        {
            "decoder": "gray_thumbnail + CameraMotion.observe (the worker's gate)",
            "output": "-",
            "cpu_ms_per_frame": round((time.process_time() - cpu) * 1000 / count, 3),
        }
    )
    return rows


def camera_jpegs(clips: Sequence[Clip]) -> tuple[list[bytes], list[bytes]]:
    """1920x1080 JPEGs: the stream bench's frames, and one frame of each clip stretched to 1080p."""
    import cv2

    from bench.frames import CAMERA_HEIGHT, CAMERA_WIDTH, JPEG_QUALITY, camera_frames, samples_dir

    bench_frames = [frame.jpeg for frame in camera_frames(samples_dir())]
    from_clips = []
    for clip in clips:
        image = cv2.imdecode(np.frombuffer(clip.jpegs[len(clip.jpegs) // 2], np.uint8), cv2.IMREAD_COLOR)
        resized = cv2.resize(image, (CAMERA_WIDTH, CAMERA_HEIGHT), interpolation=cv2.INTER_CUBIC)
        from_clips.append(
            cv2.imencode(".jpg", resized, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])[1].tobytes()
        )
    return bench_frames, from_clips


def worker_arms(frames: int, motion: Any, batch: int = 16, inflight: int = 4) -> list[dict[str, Any]]:
    """The worker end to end (`stream-worker produce`-style backlog of one 1920x1080 frame repeated,
    so that after the first nothing moves), drained twice by fresh groups on the same broker and
    Triton: with the cameras' motion settings (gated) and without (every frame examined). CPU ms
    per frame of broker + Triton + worker, as bench stream counts it."""
    import contextlib

    from bench.frames import camera_frames, samples_dir
    from bench.repository import served_repositories
    from bench.scenarios import BACKLOG_CAMERAS, explain_server_exit
    from bench.servers import start_triton
    from bench.stream import StreamBench
    from stream_worker.cameras.store import write_settings
    from stream_worker.contracts.cameras import CameraSettings
    from stream_worker.launchers.broker import LocalBroker, create_topics
    from stream_worker.watchdog import Watchdog

    still = camera_frames(samples_dir())[:1]  # the van's street, one frame
    watchdog = Watchdog()
    rows = []
    with contextlib.ExitStack() as stack:
        stack.callback(watchdog.release)
        repository, baseline = stack.enter_context(served_repositories(REPO_ROOT / "model_repository"))
        triton = start_triton(repository, baseline)
        watchdog.watch(triton.pid)
        stack.callback(triton.close)
        stack.enter_context(explain_server_exit(triton))
        broker = stack.enter_context(LocalBroker())
        watchdog.watch(broker.pid)
        servers = {"triton": triton.pid, "broker": broker.pid}
        bench = StreamBench(broker.bootstrap_servers, triton.grpc_url, 4, servers, watchdog.watch)
        stack.callback(bench.close)
        topic, _ = bench.publish_backlog(still, frames, BACKLOG_CAMERAS)
        for arm, camera_settings in (("gated", CameraSettings(motion=motion)), ("every frame", None)):
            cameras_topic = f"bench-{bench.run_id}-cameras-{arm.replace(' ', '-')}"
            create_topics(broker.bootstrap_servers, [cameras_topic], 1)
            for camera in range(BACKLOG_CAMERAS) if camera_settings is not None else ():
                write_settings(broker.bootstrap_servers, f"cam{camera}", camera_settings, cameras_topic)
            settings: dict[str, Any] = {"max_batch_frames": batch, "max_inflight_batches": inflight}
            drained = bench.drain(
                topic, frames, arm.replace(" ", "-"), {**settings, "cameras_topic": cameras_topic}
            )
            rows.append(
                {
                    "arm": arm,
                    "frames": drained["frames"],
                    "frames_examined": drained["frames"] - drained["frames_not_examined"],
                    "frames_per_s": drained["frames_per_s"],
                    "cpu_ms_per_frame": drained["cpu_ms_per_frame"],
                    **{f"{k}_cpu_ms": v for k, v in drained["cpu_ms_per_frame_by_process"].items()},
                }
            )
    gated, every = rows
    gated["of_every_frame"] = round(gated["cpu_ms_per_frame"] / every["cpu_ms_per_frame"], 3)
    # The gated arm examines a few frames too (each camera's first, heartbeats): a static frame's
    # own cost is what is left once they are charged at the full frame's cost.
    static = gated["frames"] - gated["frames_examined"]
    examined_ms = gated["frames_examined"] * every["cpu_ms_per_frame"]
    per_static = (gated["cpu_ms_per_frame"] * gated["frames"] - examined_ms) / static
    gated["static_frame_cpu_ms"] = round(per_static, 2)
    gated["static_of_full_frame"] = round(per_static / every["cpu_ms_per_frame"], 3)
    return rows


def parser() -> argparse.ArgumentParser:
    from stream_worker.cameras.motion import BACKGROUND_S
    from stream_worker.contracts.cameras import MotionSettings

    defaults = MotionSettings()
    p = argparse.ArgumentParser(prog="stream-worker bench motion", description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=Path, default=VIDEOS)
    p.add_argument("--pixel-threshold", type=int, default=defaults.pixel_threshold)
    p.add_argument("--min-changed-share", type=float, default=defaults.min_changed_share)
    p.add_argument("--pre-roll-s", type=float, default=defaults.pre_roll_s)
    p.add_argument("--post-roll-s", type=float, default=defaults.post_roll_s)
    p.add_argument("--heartbeat-s", type=float, default=defaults.heartbeat_s)
    p.add_argument("--background-s", type=float, default=BACKGROUND_S)
    p.add_argument("--lead-in-s", type=float, default=30.0, help="Seconds of still scene before each clip.")
    p.add_argument("--no-plates", action="store_true", help="Skip the recognizer (no missed-plate columns).")
    p.add_argument("--sweep", action="store_true", help="Totals over a grid of settings.")
    p.add_argument(
        "--decode", action="store_true", help="Also the CPU of the worker's grey copy per decoder."
    )
    p.add_argument(
        "--worker",
        type=int,
        default=0,
        metavar="FRAMES",
        help="Also drain a backlog of FRAMES still 1080p frames through broker, Triton and worker, "
        "gated and not: CPU per frame of each.",
    )
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


def main(argv: Sequence[str]) -> int:
    from stream_worker.contracts.cameras import MotionSettings

    args = parser().parse_args(list(argv))
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    motion = MotionSettings(
        pixel_threshold=args.pixel_threshold,
        min_changed_share=args.min_changed_share,
        pre_roll_s=args.pre_roll_s,
        post_roll_s=args.post_roll_s,
        heartbeat_s=args.heartbeat_s,
    )
    clips = load_clips(args.videos, args.lead_in_s)
    plates = None if args.no_plates else readable(clips)
    print(
        f"load average before: {idle[0]}; settings: {motion.model_dump()}, background_s {args.background_s}"
    )
    if args.sweep:
        rows = sweep_rows(clips, plates, motion)
        print(format_table(rows, list(rows[0])))
    else:
        rows = clip_rows(clips, plates, motion, args.background_s)
        print(format_table(rows, list(rows[0])))
    if args.decode:
        bench_frames, from_clips = camera_jpegs(clips)
        for label, jpegs in (
            ("the stream bench's 1920x1080 frames", bench_frames),
            ("clips at 1080p", from_clips),
        ):
            sizes = ", ".join(f"{len(j) // 1000}" for j in jpegs)
            print(f"\ndecode, {label} (KB: {sizes}), one thread:")
            rows = decode_rows(jpegs)
            print(format_table(rows, list(rows[0])))
    if args.worker:
        rows = worker_arms(args.worker, motion)
        print(f"\nworker, a backlog of {args.worker} identical 1920x1080 frames (the first examined):")
        print(format_table(rows, list(rows[0])))
    print(f"load average after: {environment.load_average()}")
    return 0
