"""`stream-worker bench soak`: `stream-worker up` with live RTSP cameras for N minutes, measured
every interval, to show that nothing grows without bound and nothing falls behind.

It starts an RTSP server that loops the clips of ../shared/videos at 25 fps (camera k: a gate
camera on the van clip with motion gating at `--gate-fps`, or a dash camera on the rainy dash clip
ungated at `--dash-fps`, alternately), `up` on a data dir (a new temp one unless `--data-dir`), and
sets, through the CLI, a watch list of the clips' plates, a local webhook target and the cameras.
Each `--interval` it records: each console page's latency (p50/p95 of `--requests` GETs, signed in
as an admin) and its answers that were not 200; `cameras status`'s wall time and CPU (run as a
person under `up` runs it: no flag, up's console answers); each child's resident memory (its process
tree: RSS, and PSS, which counts shared pages once); the data dir's bytes, total and the broker's;
the largest
`*lag_seconds*` metric and the frames/s counted by `*shed*_total` counters of the services (n/a
when none exposes one) and the connector's published frames/s; per camera the alerts of the
watched plates (distinct ids) and the pairs of one plate less than 6 s apart in capture time; the
age of each camera's newest sighting of a watched plate (now - its last read's capture time); the
passes played on the gate cameras (loops of the van clip: one alert each is right); the webhook's
deliveries. A table printed as it goes, the JSON report (`--report`) and a PNG of the
curves (`--plot`, matplotlib). A busy machine is refused unless `--allow-busy`. Ctrl-C ends a
long soak early: the rows so far are reported and drawn, exit code 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import environment
from bench.pipeline import BenchError
from bench.report import write_json
from stream_worker.contracts.topics import ALERTS, SIGHTINGS

if TYPE_CHECKING:
    from bench.soak_probe import Console, Topics
    from bench.soak_stack import Camera, Up, Webhook

COLUMNS = (
    "minute", "load_1m", "cameras_p50_ms", "cameras_p95_ms", "status_api_p95_ms", "pages_not_200",
    "cli_status_s", "cli_status_exit", "rss_mib", "pss_mib", "data_mib", "broker_mib", "lag_s", "shed_fps",
    "published_fps", "passes", "alerts", "close_pairs", "sighting_age_s", "webhook_posts",
)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench soak",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: stream-worker bench soak --minutes 120 --report soak.json --plot soak.png",
    )
    p.add_argument("--minutes", type=float, default=10.0, help="How long the cameras run.")
    p.add_argument("--interval", type=float, default=60.0, help="Seconds between two measurements.")
    p.add_argument("--cameras", type=int, default=2, help="RTSP cameras: gate, dash, gate, ...")
    p.add_argument("--gate-fps", type=float, default=10.0, help="Sampled rate of each gate camera (gated).")
    p.add_argument("--dash-fps", type=float, default=25.0, help="Sampled rate of each dash camera (ungated).")
    p.add_argument("--requests", type=int, default=5, help="GETs of each console page per measurement.")
    p.add_argument("--data-dir", type=Path, default=None, help="up's data dir (a new one; default: temp).")
    p.add_argument(
        "--videos", type=Path, default=Path("../shared/videos"), help="The clips the cameras loop."
    )
    p.add_argument(
        "--frames-retention", default=None, help="up's --frames-retention (e.g. 3m; default: up's own)."
    )
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--plot", type=Path, default=None, help="Write a PNG of the curves here (matplotlib).")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def header_line() -> str:
    return "| " + " | ".join(COLUMNS) + " |\n|" + "|".join("-" * (len(c) + 2) for c in COLUMNS) + "|"


def row_line(row: dict[str, Any]) -> str:
    """One table row, each cell as wide as its column's name (printed as it comes)."""
    return "| " + " | ".join(_cell(row.get(column)).ljust(len(column)) for column in COLUMNS) + " |"


def _sum(values: dict[str, Any]) -> float | None:
    return round(sum(values.values()), 1) if values else None


def measure(
    started: float,
    up: Up,
    console: Console,
    topics: Topics,
    webhook: Webhook,
    previous: dict[str, Any] | None,
    requests: int,
    gates: list[Camera],
) -> dict[str, Any]:
    """One row: every figure at this moment (rates against `previous`)."""
    from bench import soak_probe as probe

    at = time.monotonic()
    status = up.status()
    samples = probe.scrape(probe.metric_names(status))
    shed, published = probe.shed_total(samples), probe.published_total(samples)
    seconds = at - previous["_at"] if previous else None

    def per_s(total: float | None, key: str) -> float | None:
        if total is None or not previous or previous.get(key) is None or not seconds:
            return None
        return round((total - previous[key]) / seconds, 2)

    alerts = topics.alert_figures()
    ages = topics.sighting_age_s(datetime.now(UTC))
    rss, pss = probe.memory_by_child(status, up.process.pid)
    posts, events = webhook.counts()
    data_mib = round(probe.folder_bytes(up.data_dir) / 2**20, 1)
    broker_mib = round(probe.folder_bytes(up.data_dir / "broker") / 2**20, 1)
    # The slow ones last, so that every figure above is of the same moment.
    pages = console.pages(requests)
    cli_status = probe.cameras_status(up.data_dir)
    row = {
        "minute": round((at - started) / 60, 2),
        "load_1m": environment.load_average()[0],
        "cameras_p50_ms": pages["cameras"]["p50_ms"],
        "cameras_p95_ms": pages["cameras"]["p95_ms"],
        "status_api_p95_ms": pages["camera_status_api"]["p95_ms"],
        "pages_not_200": sum(page["not_200"] for page in pages.values()),
        "cli_status_s": cli_status["seconds"],
        "cli_status_exit": cli_status["exit"],
        "rss_mib": _sum(rss),
        "pss_mib": _sum(pss),
        "data_mib": data_mib,
        "broker_mib": broker_mib,
        "lag_s": probe.lag_seconds(samples),
        "shed_fps": per_s(shed, "_shed"),
        "published_fps": per_s(published, "_published"),
        "passes": sum(int((at - started) / camera.clip_s) for camera in gates),
        "alerts": sum(figures["alerts"] for figures in alerts.values()),
        "close_pairs": sum(figures["close_pairs"] for figures in alerts.values()),
        "sighting_age_s": max(ages.values()) if ages else None,
        "webhook_posts": posts,
        "pages": pages,
        "cli_status": cli_status,
        "rss_mib_by_child": rss,
        "pss_mib_by_child": pss,
        "alerts_by_camera": alerts,
        "sighting_age_s_by_camera": ages,
        "webhook_event_ids": events,
        "_at": at,
        "_shed": shed,
        "_published": published,
    }
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.side_reader import SideReader
    from bench.soak_probe import Console, Topics
    from bench.soak_stack import SOAK_USER, plan_cameras, running_stack

    cameras = plan_cameras(args.cameras, args.gate_fps, args.dash_fps, args.videos)
    plates = {camera.profile.plate for camera in cameras}
    gates = [camera for camera in cameras if camera.profile.kind == "gate"]
    rows: list[dict[str, Any]] = []
    stopped_early = False
    up_options = ("--frames-retention", args.frames_retention) if args.frames_retention else ()
    with running_stack(cameras, args.videos, args.data_dir, up_options) as (up, password, webhook, _folder):
        topics = Topics(plates)
        reader = SideReader(up.bootstrap, [ALERTS.name, SIGHTINGS.name], topics.handle, "soak-reader")
        reader.start()
        try:
            console = Console(up.console_url, SOAK_USER, password)
            started = time.monotonic()
            print(header_line(), flush=True)
            previous = None
            # Measured at each multiple of the interval up to the end; one that overran its interval
            # makes the next start late, never skipped. Ctrl-C (or SIGTERM) ends a long soak early
            # with the rows so far reported.
            try:
                for k in range(1, int(args.minutes * 60 / args.interval + 1e-9) + 1):
                    time.sleep(max(0.0, started + k * args.interval - time.monotonic()))
                    if up.process.poll() is not None:
                        raise BenchError(f"up exited with {up.process.returncode}:\n{up.output_tail()}")
                    previous = measure(started, up, console, topics, webhook, previous, args.requests, gates)
                    rows.append(previous)
                    print(row_line(previous), flush=True)
            except (KeyboardInterrupt, SystemExit):
                stopped_early = True
                print("stopped early: the rows so far are reported", file=sys.stderr, flush=True)
        finally:
            reader.stop()
        return {
            "cameras": [camera.to_json() for camera in cameras],
            "data_dir": str(up.data_dir),
            "invalid_records": topics.invalid,
            "stopped_early": stopped_early,
            "rows": [{key: value for key, value in row.items() if not key.startswith("_")} for row in rows],
        }


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    problems = [
        f"--{name} must be positive"
        for name in ("minutes", "interval", "cameras", "requests", "gate_fps", "dash_fps")
        if getattr(args, name) <= 0
    ]
    if problems:
        print("error: " + "; ".join(p.replace("_", "-") for p in problems), file=sys.stderr)
        return 2
    if args.plot is not None:
        from bench.soak_plot import plot_unavailable

        if why := plot_unavailable():
            print(f"error: --plot: {why}", file=sys.stderr)
            return 2
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    started = datetime.now(UTC)
    clock = time.monotonic()
    versions = environment.versions()  # of the code that runs, before anyone commits during a long soak
    try:
        result = run(args)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = {
        "scenario": "soak",
        "command": "stream-worker bench soak " + " ".join(argv),
        "started_at": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - clock, 1),
        "machine": environment.machine(),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "load_threshold": environment.IDLE_LOAD,
        "busy": busy,
        "versions": versions,
        "settings": {
            key: str(value) if isinstance(value, Path) else value
            for key, value in vars(args).items()
            if key not in ("report", "plot")
        },
        "columns": list(COLUMNS),
        **result,
    }
    print(
        f"machine: {report['machine']['cpu_model']}, {report['machine']['usable_cores']} cores; load "
        f"before/after {load_before} / {report['load_average']['after']}"
        + (" - BUSY (figures inflated)" if busy else "")
    )
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    if args.plot:
        from bench.soak_plot import plot

        plot(report, args.plot)
        print(f"plot written to {args.plot}")
    return 1 if result["stopped_early"] else 0
