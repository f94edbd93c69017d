"""`stream-worker bench SCENARIO`: run a benchmark, print its table, write its JSON report.

Scenarios: pipeline (ours vs the original design, Triton only), limit (the in-process compute
floor vs ours), regions (the second recognizer's cost: per plate, and per frame for ru, a Latin
region and auto), stream (Kafka end to end: backlog drain and paced live load), sweep (worker
batching settings), triton (pipeline and limit, no Kafka), all (every scenario against one
Triton and one broker, plus the ratios between them). Every report carries the machine, the
versions and each run's settings. `sightings` (bench/sightings.py, its own flags): exact texts per
frame and per sighting over labelled photos made into vehicle passes. `videos` (bench/videos.py):
the real clips through the whole stack, one camera per clip. `gating` (bench/gating.py): what
motion gating saves on a long live camera read by the connector, gated and ungated side by side.
`connector-memory` (bench/connector_memory.py): many file-source cameras on one connector, its RSS.
`motion` (bench/motion.py): what the motion gate leaves out of ../shared/videos, and the CPU of
its grey copy of a JPEG. `store-search` (bench/store_search.py): plate searches and the writer's
rate in the history store at a million sightings, SQLite and PostgreSQL side by side.
`store-reports` (bench/store_reports.py): each console report over the same store. `notify`
(bench/notify.py): the same alerts delivered by the notify service to a webhook, an MQTT subscriber
and an SMTP server, all local: latency per target, deliveries per second, CPU ms per delivery.
`soak` (bench/soak.py): `up` with live RTSP cameras for N minutes, measured every minute (console
pages, `cameras status`, memory, disk, lag, shed frames, alerts per pass). `triton-memory`
(bench/triton_memory.py): a local Triton fed real frames of varying sizes, each process's memory.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import environment
from bench.frames import camera_frames, samples_dir
from bench.report import format_table, ratio, write_json

REPO_ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("pipeline", "limit", "regions", "stream", "sweep", "triton", "all")
# The targets the headline figures are judged against: ours over the baseline in frames/s (issue
# 12); end to end on 1920x1080 frames, a rate or a CPU cost per frame summed over broker, Triton and
# worker; the in-process floor's CPU per frame, ours through Triton as a fraction of it by CPU per
# frame, and the worker's and broker's own CPU per frame.
PIPELINE_TARGET = 1.5
STREAM_TARGET = {"frames_per_s": 32.0, "cpu_ms_per_frame": 62.0}
LIMIT_TARGET = {"floor_cpu_ms_per_frame": 45.0, "triton_cpu_fraction_of_limit": 0.9}
WORKER_AND_BROKER_TARGET_CPU_MS = 8.0


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers")
    return values


def parser() -> argparse.ArgumentParser:
    from stream_worker.worker.settings import WorkerSettings

    defaults = WorkerSettings()
    p = argparse.ArgumentParser(
        prog="stream-worker bench",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog=(
            "Examples:\n\n  stream-worker bench all --frames 96 --report reports/all.json\n\n"
            "  stream-worker bench pipeline --frames 64 --rounds 3\n\n"
            "  stream-worker bench stream --backlog 5000 --report reports/stream5000.json\n\n"
            "The other benchmarks take their own flags (stream-worker bench NAME --help): chaos, "
            "sightings, motion, connector-memory, gating, store-search, store-reports, notify, soak, videos, "
            "triton-memory."
        ),
    )
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument(
        "--frames",
        type=int,
        default=64,
        help="Frames per system per round (pipeline, limit); backlog size (stream); per setting (sweep).",
    )
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--rounds", type=int, default=2, help="A/B rounds (pipeline, limit, sweep).")
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--model-config-name", default=None, help="Each model's configs/NAME.pbtxt (e.g. gpu).")
    p.add_argument("--batch", type=int, default=defaults.max_batch_frames, help="Our frames per request.")
    p.add_argument(
        "--concurrency", type=int, default=defaults.max_inflight_batches, help="Our requests in flight."
    )
    p.add_argument("--baseline-concurrency", type=int, default=4, help="Baseline requests in flight.")
    p.add_argument("--limit-workers", type=int, default=2, help="Threads of the in-process limit.")
    p.add_argument(
        "--providers",
        default="",
        help="onnxruntime providers of the in-process limit, comma-separated (default: CPU).",
    )
    p.add_argument(
        "--latin-region", default="us", help="regions: the single Latin region set beside ru and auto."
    )
    p.add_argument("--backlog", type=int, default=None, help="Backlog frames (stream; default: --frames).")
    p.add_argument("--cameras", type=int, default=4, help="Live load: cameras (stream).")
    p.add_argument("--fps", type=float, default=1.0, help="Live load: frames per second per camera.")
    p.add_argument("--live-seconds", type=float, default=60.0, help="Live load: how long cameras publish.")
    p.add_argument("--partitions", type=int, default=4, help="Partitions of the benchmark topics.")
    p.add_argument("--sweep-batch", type=_int_list, default=[8, 16, 32], help="max_batch_frames grid.")
    p.add_argument("--sweep-inflight", type=_int_list, default=[2, 4], help="max_inflight_batches grid.")
    p.add_argument(
        "--parameter",
        action="append",
        default=[],
        metavar="MODEL.KEY=VALUE",
        help="Serve a copy of the repository with this config parameter set (repeatable), e.g. "
        "plate_recognition.detector_scales=1.0; ours, the baseline and the limit all use it.",
    )
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


# The benchmarks with flags of their own: `stream-worker bench NAME ...` is bench/<module>.py's main,
# its --help drawn from that module's parser() in the layout of every other command.
OWN_FLAGS = {
    "chaos": "bench.chaos",
    "sightings": "bench.sightings",
    "motion": "bench.motion",
    "connector-memory": "bench.connector_memory",
    "gating": "bench.gating",
    "store-search": "bench.store_search",
    "store-reports": "bench.store_reports",
    "notify": "bench.notify",
    "soak": "bench.soak",
    "videos": "bench.videos",
    "triton-memory": "bench.triton_memory",
}


def main(argv: Sequence[str]) -> int:
    if argv and argv[0] in OWN_FLAGS:
        module = importlib.import_module(OWN_FLAGS[argv[0]])
        if "--help" in argv or "-h" in argv:
            from stream_worker.service.help_layout import print_parser_help

            print_parser_help(module.parser())
            return 0
        return module.main(argv[1:])
    if "--help" in argv or "-h" in argv:  # in the layout of every other command
        from stream_worker.service.help_layout import print_parser_help

        print_parser_help(parser())
        return 0
    args = parser().parse_args(list(argv))
    for name in ("frames", "rounds", "batch", "concurrency", "baseline_concurrency", "limit_workers"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    from bench.pipeline import BenchError
    from bench.scenarios import run_scenarios
    from stream_worker.launchers.triton import TritonLaunchError

    started = datetime.now(UTC)
    clock = time.monotonic()
    distinct = camera_frames(samples_dir())
    try:
        results, server_version = run_scenarios(args, distinct)
    except (BenchError, TritonLaunchError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report: dict[str, Any] = {
        "scenario": args.scenario,
        "command": "stream-worker bench " + " ".join(argv),
        "started_at": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - clock, 1),
        "machine": environment.machine(),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "load_threshold": environment.IDLE_LOAD,
        "busy": busy,
        "versions": environment.versions(server_version),
        "input": {
            "distinct_frames": [
                {"name": f.name, "bytes": len(f.jpeg), "has_plate": f.has_plate} for f in distinct
            ],
            "frame_size": "1920x1080 JPEG",
        },
        "parameters_overridden": args.parameter,
        "results": results,
        "summary": summarize(results),
    }
    print(render(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """The headline figures and the targets they are judged against."""
    summary: dict[str, Any] = {}
    if pipeline := results.get("pipeline"):
        summary["pipeline_ratio_vs_baseline"] = pipeline["ratio_frames_per_s"]["baseline"]
        summary["pipeline_ratio_vs_baseline_per_core"] = pipeline["ratio_frames_per_s"]["baseline_per_core"]
        summary["pipeline_cpu_ratio_vs_baseline"] = pipeline["ratio_cpu_per_frame"]["baseline"]
        summary["pipeline_target"] = PIPELINE_TARGET
        summary["pipeline_target_met"] = (pipeline["ratio_frames_per_s"]["baseline"] or 0) >= PIPELINE_TARGET
    if limit := results.get("limit"):
        summary["limit_frames_per_s"] = limit["limit_frames_per_s"]
        summary["triton_fraction_of_limit"] = limit["ours_fraction_of_limit"]
        summary["triton_cpu_fraction_of_limit"] = limit["ours_cpu_fraction_of_limit"]
        profile = limit["stage_profile"]
        summary["compute_cpu_ms_per_frame"] = profile["total_cpu_ms_per_frame"]
        summary["detect_share_of_compute"] = profile["detect_share"]
        summary["limit_cpu_ms_per_frame"] = limit["systems"]["limit"]["cpu_ms_per_frame"]
        summary["limit_target"] = dict(LIMIT_TARGET)
        summary["limit_target_met"] = (
            summary["limit_cpu_ms_per_frame"] <= LIMIT_TARGET["floor_cpu_ms_per_frame"]
            and (limit["ours_cpu_fraction_of_limit"] or 0) >= LIMIT_TARGET["triton_cpu_fraction_of_limit"]
        )
        summary["detector_canvases_per_frame"] = profile["canvases_per_frame"]
        summary["detector_canvas_area_per_frame"] = profile["canvas_area_per_frame"]
        summary["detector_cpu_ms_per_canvas"] = profile["detector_cpu_ms_per_canvas"]["batched"]
        summary["detector_cpu_ms_per_canvas_one_per_run"] = profile["detector_cpu_ms_per_canvas"][
            "one_per_run"
        ]
        summary["detector_bound_frames_per_s"] = profile["detector_bound_frames_per_s"]
        if pipeline:
            # Ours with a serving cost of zero, against the baseline: the limit over ours (their
            # A/B run) times ours over the baseline (theirs), so that each ratio is side by side.
            limit_over_ours = limit["limit_frames_per_s"] / limit["systems"]["ours"]["frames_per_s"]
            summary["pipeline_ceiling_vs_baseline"] = round(
                limit_over_ours * pipeline["ratio_frames_per_s"]["baseline"], 3
            )
    if regions := results.get("regions"):
        summary["regions_cpu_per_frame_over_ru"] = regions["cpu_per_frame_over_ru"]
        summary["regions_cpu_ms_per_plate_batched"] = {
            name: costs["batched"] for name, costs in regions["per_plate"]["cpu_ms_per_plate"].items()
        }
        summary["regions_targets"] = regions["targets"]
        summary["regions_targets_met"] = regions["targets_met"]
        summary["regions_mean_batch"] = {
            model: figures["mean_batch"] for model, figures in regions["triton_batches"].items()
        }
    if stream := results.get("stream"):
        summary["stream_drain_frames_per_s"] = stream["backlog"]["frames_per_s"]
        summary["stream_drain_cpu_ms_per_frame"] = stream["backlog"]["cpu_ms_per_frame"]
        summary["stream_target"] = dict(STREAM_TARGET)  # met when either holds
        summary["stream_target_met"] = (
            stream["backlog"]["frames_per_s"] >= STREAM_TARGET["frames_per_s"]
            or stream["backlog"]["cpu_ms_per_frame"] <= STREAM_TARGET["cpu_ms_per_frame"]
        )
        summary["worker_peak_rss_mib"] = stream["backlog"]["worker_peak_rss_mib"]
        by_process = stream["backlog"]["cpu_ms_per_frame_by_process"]
        worker_and_broker = round(by_process.get("worker", 0.0) + by_process.get("broker", 0.0), 1)
        summary["stream_cpu_ms_per_frame_by_process"] = by_process
        summary["worker_and_broker_cpu_ms_per_frame"] = worker_and_broker
        summary["worker_and_broker_target_met"] = worker_and_broker <= WORKER_AND_BROKER_TARGET_CPU_MS
        if limit:
            summary["stream_fraction_of_limit"] = ratio(
                stream["backlog"]["frames_per_s"], limit["limit_frames_per_s"]
            )
            summary["stream_cpu_fraction_of_limit"] = ratio(
                limit["systems"]["limit"]["cpu_ms_per_frame"], stream["backlog"]["cpu_ms_per_frame"]
            )
    if sweep := results.get("sweep"):
        summary["sweep_best"] = sweep["best"]
    return summary


def render(report: dict[str, Any]) -> str:
    """The printed tables, one per scenario, then the summary."""
    results = report["results"]
    parts = [
        f"machine: {report['machine']['cpu_model']}, {report['machine']['usable_cores']} cores, "
        f"flags {' '.join(report['machine'].get('cpu_flags') or ['none'])}; "
        f"load average before/after: {report['load_average']['before']} / {report['load_average']['after']}"
        + (" - BUSY (figures inflated)" if report["busy"] else "")
    ]
    system_columns = ["system", "frames", "frames_per_s", "p50_ms", "p99_ms", "cpu_ms_per_frame"]
    system_columns += ["cpu_bound_fps", "frames_with_plates"]
    for name in ("pipeline", "limit"):
        if name in results:
            rows = list(results[name]["systems"].values())
            parts.append(f"\n{name}:\n" + format_table(rows, system_columns))
    if "limit" in results:
        profile = results["limit"]["stage_profile"]
        row = {**profile["stage_cpu_ms_per_frame"], "total": profile["total_cpu_ms_per_frame"]}
        per_canvas = profile["detector_cpu_ms_per_canvas"]
        parts.append(
            f"\nlimit, CPU ms per frame by stage ({profile['frames']} frames, all on one thread):\n"
            + format_table([row], list(row))
            + f"\ndetector: {profile['canvases_per_frame']} canvases per frame "
            f"({profile['canvas_area_per_frame']} of a 640x640 canvas in area), CPU ms per canvas "
            f"{per_canvas['batched']} as ours runs it ({profile['detector_images_per_run']} per ONNX Runtime "
            f"run), {per_canvas['one_per_run']} one per run (as the baseline)"
        )
    if regions := results.get("regions"):
        rows = [
            {**system, "cpu_over_ru": regions["cpu_per_frame_over_ru"][name]}
            for name, system in regions["systems"].items()
        ]
        per_plate = regions["per_plate"]
        plate_rows = [{"recognizer": name, **costs} for name, costs in per_plate["cpu_ms_per_plate"].items()]
        parts.append(
            "\nregions, per 1080p frame through Triton (client + server CPU):\n"
            + format_table(rows, [*system_columns, "cpu_over_ru"])
            + f"\nregions, CPU ms per plate in process ({per_plate['plates']} plates, one thread, "
            f"{per_plate['plates_per_batched_run']} per batched run):\n"
            + format_table(plate_rows, ["recognizer", "one_per_run", "batched"])
        )
    if stream := results.get("stream"):
        backlog_columns = ["frames", "seconds", "frames_per_s", "worker_peak_rss_mib", "p50_ms", "p99_ms"]
        backlog_columns += ["cpu_ms_per_frame", "cpu_bound_fps", "frames_not_delivered_by_broker"]
        parts.append("\nstream backlog drain:\n" + format_table([stream["backlog"]], backlog_columns))
        live_columns = [
            "offered_fps",
            "achieved_fps",
            "frames",
            "max_lag_frames",
            "mean_lag_frames",
            "p50_ms",
            "p99_ms",
            "frames_not_delivered_by_broker",
        ]
        parts.append("\nstream live load:\n" + format_table([stream["live"]], live_columns))
    if sweep := results.get("sweep"):
        columns = [
            "max_batch_frames",
            "max_inflight_batches",
            "frames",
            "frames_per_s",
            "round_frames_per_s",
            "p50_ms",
        ]
        columns += ["cpu_ms_per_frame", "worker_peak_rss_mib"]
        parts.append("\nsweep:\n" + format_table(sweep["runs"], columns))
    summary = [f"  {key}: {value}" for key, value in report["summary"].items()]
    summary.append(f"  load: {load_line(report)}")
    parts.append("\nsummary:\n" + "\n".join(summary))
    return "\n".join(parts)


def load_line(report: dict[str, Any]) -> str:
    """The 1/5/15-minute load before and after the run, and whether it was too busy to trust."""
    load = report["load_average"]
    line = f"before {load['before']}, after {load['after']} (1/5/15 min; "
    line += f"idle: 1 min at most {report['load_threshold']} before)"
    return line + (" - BUSY (figures inflated)" if report["busy"] else "")
