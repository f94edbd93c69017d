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

This module is the command (its flags, the report's header); the parts: chaos_plan.py (the frames
and what each must produce), chaos_traffic.py (publisher and consumer), chaos_faults.py (the
SIGKILLs, restarts and memory peaks), chaos_run.py (the run), chaos_logs.py (what the logs tell),
chaos_report.py (results, tables).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench import environment
from bench.chaos_plan import plan_frames, valid_frames
from bench.chaos_report import render, results
from bench.chaos_run import ChaosRun
from bench.frames import samples_dir
from bench.hostile import KINDS_BY_NAME, pick_kinds
from bench.report import write_json


def parser() -> argparse.ArgumentParser:
    from stream_worker.worker.settings import WorkerSettings

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
    p.add_argument("--repository", type=Path, default=environment.REPO_ROOT / "model_repository")
    p.add_argument("--model-config-name", default=None, help="Each model's configs/NAME.pbtxt (e.g. gpu).")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument(
        "--logs", type=Path, default=None, help="Keep the workers' and Triton's logs in this folder."
    )
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


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
        run.run()
    except TritonLaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    findings = results(run, run.frames_topic)
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
        **findings,
    }
    print(render(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0 if report["ok"] else 1
