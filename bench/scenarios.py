"""Start the servers a scenario needs (once, shared by every scenario of an `all` run) and run it."""

from __future__ import annotations

import argparse
import contextlib
import statistics
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bench.frames import BenchFrame, cycle
from bench.limit import run_limit
from bench.pipeline import BenchError, run_pipeline
from bench.report import rate
from bench.repository import parse_overrides, served_repositories
from bench.servers import start_triton, triton_version
from stream_worker.watchdog import Watchdog

if TYPE_CHECKING:  # imported when needed: pipeline and limit must run without confluent-kafka
    from bench.stream import StreamBench
    from stream_worker.launchers.triton import LocalTriton

INCLUDED = {
    "pipeline": ("pipeline",),
    "limit": ("limit",),
    "stream": ("stream",),
    "sweep": ("sweep",),
    "triton": ("pipeline", "limit"),  # no Kafka: what bench/gpu.sh runs
    "regions": ("regions",),
    "all": ("pipeline", "limit", "regions", "stream", "sweep"),
}
BACKLOG_CAMERAS = 4


def run_scenarios(
    args: argparse.Namespace, distinct: Sequence[BenchFrame]
) -> tuple[dict[str, Any], str | None]:
    """Each included scenario's results, and the Triton server's version.

    A snapshot of the model repository is served, with the `--parameter` overrides applied, and
    every system (ours, the baseline, the in-process limit) reads its parameters from it.
    """
    included = INCLUDED[args.scenario]
    overrides = parse_overrides(args.parameter)
    frames = cycle(list(distinct), args.frames)
    results: dict[str, Any] = {}
    # Servers and workers run in their own sessions: should this process be killed, the watchdog
    # stops them (normally they are stopped below and the watchdog is released).
    watchdog = Watchdog()
    with contextlib.ExitStack() as stack:
        stack.callback(watchdog.release)
        repository, baseline_repository = stack.enter_context(
            served_repositories(args.repository, args.model_config_name, overrides)
        )
        triton = start_triton(repository, baseline_repository, args.model_config_name)
        watchdog.watch(triton.pid)
        stack.callback(triton.close)
        stack.enter_context(explain_server_exit(triton))
        version = triton_version(triton.http_url)
        if "pipeline" in included:
            results["pipeline"] = run_pipeline(
                triton.grpc_url,
                triton.http_url,
                triton.pid,
                frames,
                args.rounds,
                args.batch,
                args.concurrency,
                args.baseline_concurrency,
            )
        if "limit" in included:
            results["limit"] = run_limit(
                repository,
                triton.grpc_url,
                triton.pid,
                frames,
                args.rounds,
                args.batch,
                args.limit_workers,
                args.concurrency,
                args.model_config_name,
                [p for p in args.providers.split(",") if p],
            )
        if "regions" in included:
            from bench.regions import run_regions  # imports the formats book, which limit does not need

            results["regions"] = run_regions(
                repository,
                triton.grpc_url,
                triton.http_url,
                triton.pid,
                frames,
                args.rounds,
                args.batch,
                args.concurrency,
                args.latin_region,
                args.model_config_name,
            )
        if "stream" in included or "sweep" in included:
            from bench.stream import StreamBench
            from stream_worker.launchers.broker import LocalBroker

            broker = stack.enter_context(LocalBroker())
            watchdog.watch(broker.pid)
            # Both servers run in their own session: each is the leader of its process group.
            servers = {"triton": triton.pid, "broker": broker.pid}
            bench = StreamBench(
                broker.bootstrap_servers, triton.grpc_url, args.partitions, servers, watchdog.watch
            )
            stack.callback(bench.close)
            if "stream" in included:
                results["stream"] = run_stream(bench, args, distinct)
            if "sweep" in included:
                results["sweep"] = run_sweep(bench, args, distinct)
    return results, version


@contextlib.contextmanager
def explain_server_exit(triton: LocalTriton) -> Iterator[None]:
    """A failing scenario says whether Triton still runs and how its log ends (the server's cleanup
    removes the log)."""
    try:
        yield
    except Exception as error:
        state = "still running" if triton.is_running() else "no longer running"
        raise BenchError(f"{error}\ntritonserver is {state}; its log ends:\n{triton.log_tail()}") from error


def worker_settings(batch: int, inflight: int) -> dict[str, int]:
    return {"max_batch_frames": batch, "max_inflight_batches": inflight}


def run_stream(
    bench: StreamBench, args: argparse.Namespace, distinct: Sequence[BenchFrame]
) -> dict[str, Any]:
    backlog = args.backlog or args.frames
    settings = worker_settings(args.batch, args.concurrency)
    topic, publish_seconds = bench.publish_backlog(distinct, backlog, BACKLOG_CAMERAS)
    drained = bench.drain(topic, backlog, "drain", settings)
    drained["publish_seconds"] = round(publish_seconds, 3)
    live = bench.live(distinct, args.cameras, args.fps, args.live_seconds, settings)
    return {"backlog": drained, "live": live, "partitions": args.partitions}


def run_sweep(bench: StreamBench, args: argparse.Namespace, distinct: Sequence[BenchFrame]) -> dict[str, Any]:
    """Every (max_batch_frames, max_inflight_batches) pair drains the same backlog, `rounds` times.

    Round by round (every setting once per round) so that other load on the machine hits them
    alike; a setting's figures pool its rounds.
    """
    from stream_worker.worker.settings import WorkerSettings

    defaults = WorkerSettings()
    topic, _ = bench.publish_backlog(distinct, args.frames, BACKLOG_CAMERAS)
    grid = [
        (batch, inflight)
        for batch in args.sweep_batch
        for inflight in args.sweep_inflight
        if batch <= defaults.max_pending_frames  # the worker refuses a larger batch
    ]
    drains: dict[tuple[int, int], list[dict[str, Any]]] = {setting: [] for setting in grid}
    for round_index in range(args.rounds):
        for batch, inflight in grid:
            name = f"sweep-b{batch}-i{inflight}-r{round_index + 1}"
            drains[(batch, inflight)].append(
                bench.drain(topic, args.frames, name, worker_settings(batch, inflight))
            )
    runs = [pool_drains(batch, inflight, rounds) for (batch, inflight), rounds in drains.items()]
    best = max(runs, key=lambda run: run["frames_per_s"])
    default = worker_settings(defaults.max_batch_frames, defaults.max_inflight_batches)
    return {
        "frames_per_setting": args.frames,
        "rounds": args.rounds,
        "runs": runs,
        "best": {
            "max_batch_frames": best["max_batch_frames"],
            "max_inflight_batches": best["max_inflight_batches"],
            "frames_per_s": best["frames_per_s"],
        },
        "defaults": default,
        "best_differs_from_defaults": worker_settings(best["max_batch_frames"], best["max_inflight_batches"])
        != default,
    }


def pool_drains(batch: int, inflight: int, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's drains as one: frames and seconds summed, the worst memory, typical latency."""
    frames = sum(run["frames"] for run in rounds)
    seconds = sum(run["seconds"] for run in rounds)
    cpu_ms = sum(run["cpu_ms_per_frame"] * run["frames"] for run in rounds) / frames
    return {
        "max_batch_frames": batch,
        "max_inflight_batches": inflight,
        "rounds": len(rounds),
        "frames": frames,
        "seconds": round(seconds, 3),
        "frames_per_s": rate(frames, seconds),
        "round_frames_per_s": [run["frames_per_s"] for run in rounds],
        "p50_ms": statistics.median(run["p50_ms"] for run in rounds),
        "cpu_ms_per_frame": round(cpu_ms, 1),
        "worker_peak_rss_mib": max(run["worker_peak_rss_mib"] for run in rounds),
        "worker_exit_codes": [run["worker_exit_code"] for run in rounds],
    }
