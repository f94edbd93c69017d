"""`stream-worker bench connector-memory`: many file-source cameras on one connector, its memory over time.

`--cameras` cameras (default 50), each a looped clip of ../shared/videos (in turn) sampled to `--fps`,
are read by one `stream-worker connect` against the local broker for `--minutes` (default 10). Its
resident memory (RSS) and CPU are sampled every `--every-s` seconds; printed: the samples, and RSS
at the end of the first minute against the last (flat: the connector holds nothing per frame
beyond its bounded queues).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import environment
from bench.cpu import process_cpu_s
from bench.report import format_table, write_json
from bench.sightings import REPO_ROOT, Service, SightingsBenchError
from stream_worker.contracts.topics import CAMERAS, FRAMES

VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench connector-memory",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: LPR_WEIGHTS_DIR=../shared/weights stream-worker bench connector-memory --minutes 10",
    )
    p.add_argument("--cameras", type=int, default=50)
    p.add_argument("--fps", type=float, default=2.0, help="Frames per second each camera samples.")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--every-s", type=float, default=30.0, help="Seconds between two samples.")
    p.add_argument("--motion", action="store_true", help="Motion gating on for every camera.")
    p.add_argument("--videos", type=Path, default=REPO_ROOT.parent / "shared" / "videos")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    clips = sorted(p for p in args.videos.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    if not clips or args.cameras < 1:
        print(f"error: no video in {args.videos} (or --cameras < 1)", file=sys.stderr)
        return 2
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    from stream_worker.cameras.records import encode_settings
    from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
    from stream_worker.launchers.broker import LocalBroker, create_topics
    from stream_worker.service.compacted import write_compacted

    samples: list[dict[str, Any]] = []
    try:
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-memory-") as logs:
            broker = stack.enter_context(LocalBroker())
            bootstrap = str(broker.bootstrap_servers)
            create_topics(bootstrap, [FRAMES.name], 6)
            connector = Service(
                "connect", ["--bootstrap-servers", bootstrap, "--metrics-host", "127.0.0.1"], Path(logs)
            )
            stack.callback(connector.stop)
            connector.wait_ready()
            settings = [
                encode_settings(
                    f"cam-{number:03d}",
                    CameraSettings(
                        source=CameraSource(url=str(clips[number % len(clips)]), fps=args.fps, loop=True),
                        motion=MotionSettings() if args.motion else None,
                    ),
                )
                for number in range(args.cameras)
            ]
            write_compacted(bootstrap, CAMERAS.name, settings)
            started = time.monotonic()
            print(f"{args.cameras} cameras on one connector for {args.minutes:g} min ...", flush=True)
            while (elapsed := time.monotonic() - started) <= args.minutes * 60:
                connector.check()
                samples.append(
                    {
                        "minute": round(elapsed / 60, 1),
                        "rss_mib": round(rss_mib(connector.pid), 1),
                        "cpu_s": round(process_cpu_s(connector.pid), 1),
                    }
                )
                time.sleep(args.every_s)
    except SightingsBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    settled = next((s for s in samples if s["minute"] >= 1), samples[0])
    last = samples[-1]
    report = {
        "scenario": "connector-memory",
        "command": "stream-worker bench connector-memory " + " ".join(argv),
        "cameras": args.cameras,
        "fps": args.fps,
        "minutes": args.minutes,
        "load_average": {"before": load_before, "after": environment.load_average()},
        "busy": busy,
        "samples": samples,
        "rss_after_1_min_mib": settled["rss_mib"],
        "rss_last_mib": last["rss_mib"],
        "rss_max_mib": max(s["rss_mib"] for s in samples),
        "cpu_s_per_camera_hour": round(
            (last["cpu_s"] - samples[0]["cpu_s"])
            / max(1e-9, last["minute"] - samples[0]["minute"])
            * 60
            / args.cameras,
            1,
        ),
    }
    print(format_table(samples, ["minute", "rss_mib", "cpu_s"]))
    print(
        f"\nRSS after the first minute {report['rss_after_1_min_mib']} MiB, at the end "
        f"{report['rss_last_mib']} MiB, at most {report['rss_max_mib']} MiB; connector CPU "
        f"{report['cpu_s_per_camera_hour']} s per camera-hour; load average before/after "
        f"{load_before} / {report['load_average']['after']}"
    )
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0
