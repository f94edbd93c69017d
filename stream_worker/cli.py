"""The `stream-worker` command line: thin commands that hand over to the module doing the work.

Each command's body only parses options and calls one function elsewhere, so the commands stay
importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.alerts import cli as alerts
from stream_worker.cameras import cli as cameras
from stream_worker.evaluation import commands as evaluation
from stream_worker.launchers import commands as launchers
from stream_worker.nets import commands as nets
from stream_worker.service.options import (
    DEFAULT_REPOSITORY,
    REPO_ROOT,
)
from stream_worker.sightings import commands as sightings
from stream_worker.tools import commands as tools
from stream_worker.worker import commands as worker

app = typer.Typer(
    name="stream-worker",
    help="Read licence plates from Kafka camera feeds with an NVIDIA Triton pipeline.",
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker demo\n\n"
        "  stream-worker recognize ../shared/samples/car.jpg\n\n"
        "  stream-worker run --bootstrap-servers kafka:9092 --triton-url triton:8001\n\n"
        "  stream-worker sightings --bootstrap-servers kafka:9092\n\n"
        "Each command's --help has its own examples and exit codes; see also README.md."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(nets.models_app, name="models")


def _add(package_commands: typer.Typer, *names: str) -> None:
    """Add the named commands of a package's `commands` Typer to the root app, in this order."""
    registered = {info.name or info.callback.__name__: info for info in package_commands.registered_commands}
    app.registered_commands.extend(registered[name] for name in names)


_add(launchers.commands, "triton")


_add(tools.commands, "recognize")


_add(evaluation.commands, "eval")


_add(launchers.commands, "broker")


_add(tools.commands, "produce")


_add(tools.commands, "tail")


_add(worker.commands, "run")


_add(sightings.commands, "sightings")


_add(alerts.commands, "alerts")


app.add_typer(tools.schemas_app, name="schemas")


# --- demo -------------------------------------------------------------------------- (issue 4)
@app.command(
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker demo\n\n"
        "  stream-worker demo photos/ --cameras 6 --fps 5 --duration 30\n\n"
        "  stream-worker demo clip.mp4 --bootstrap-servers kafka:9092 --triton-url triton:8001\n\n"
        "Exit codes: 0 every frame published came back as an event or a dead letter, 1 a server or "
        "the worker failed or frames went unaccounted for, 2 nothing to publish, an unusable path, "
        "or missing/corrupt weights, 130 interrupted (Ctrl-C; 143 SIGTERM)."
    )
)
def demo(
    inputs: list[Path] = typer.Argument(
        None,
        help="JPEG files, folders of JPEGs or videos to publish "
        "(default: the JPEGs in $LPR_WEIGHTS_DIR/../samples).",
        show_default=False,
    ),
    cameras: int = typer.Option(3, "--cameras", min=1, max=100, help="Simulated cameras publishing."),
    fps: float = typer.Option(1.0, "--fps", min=0.1, max=1000.0, help="Frames per second per camera."),
    duration: float = typer.Option(10.0, "--duration", min=0.1, help="Seconds each camera publishes."),
    corrupt_frames: int = typer.Option(
        1, "--corrupt-frames", min=0, help="Undecodable frames cam-1 sends, to show the dead-letter topic."
    ),
    bootstrap_servers: str | None = typer.Option(
        None,
        "--bootstrap-servers",
        help="Use this Kafka (run-specific topics, deleted afterwards) instead of starting the local broker.",
        show_default=False,
    ),
    triton_url: str | None = typer.Option(
        None,
        "--triton-url",
        help="Use this Triton (gRPC HOST:PORT) instead of exporting the models and starting the local one.",
        show_default=False,
    ),
    weights_dir: Path | None = typer.Option(
        None,
        "--weights-dir",
        help="Folder holding stn.pth and lprnet.pth (default: $LPR_WEIGHTS_DIR).",
        show_default=False,
    ),
    repository: Path = typer.Option(DEFAULT_REPOSITORY, "--repository", help="Triton model repository."),
    plate_images: Path | None = typer.Option(
        None,
        "--plate-images",
        help="Folder for the plate pictures of the events and sightings "
        "(default: a new folder per run under the system's temporary folder, the 5 newest kept; "
        "the summary names it).",
        show_default=False,
    ),
) -> None:
    """Run the whole pipeline on this machine and show the plate events live.

    Starts what is not given (local Kafka broker, models, local Triton) and a worker.

    Simulated cameras publish the frames; each event and dead letter is printed, then a summary.

    Everything the demo starts is stopped when it ends, fails, or gets Ctrl-C or SIGTERM.
    """
    from stream_worker.demo.app import DemoOptions, run_demo

    options = DemoOptions(
        inputs=inputs or (),
        cameras=cameras,
        fps=fps,
        duration_s=duration,
        corrupt_frames=corrupt_frames,
        bootstrap_servers=bootstrap_servers,
        triton_url=triton_url,
        weights_dir=weights_dir,
        repository=repository,
        plate_images=plate_images,
    )
    raise typer.Exit(run_demo(options))


# --- bench ------------------------------------------------------------------------- (issue 5)
# The benchmarks live in the repository's bench/ folder (beside model_repository/, which they
# need), not in the installed package: the command works from a source checkout.
@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def bench(ctx: typer.Context) -> None:
    """Benchmarks: pipeline | limit | stream | sweep | triton | all; a table and a JSON report (bench --help).

    Example: stream-worker bench pipeline --frames 64 --report reports/pipeline.json
    Faults: stream-worker bench chaos (worker and Triton SIGKILLs, hostile frames; bench chaos --help).
    """
    import sys

    if not (REPO_ROOT / "bench" / "main.py").is_file():
        typer.echo(f"error: the benchmarks need a source checkout ({REPO_ROOT}/bench is missing)", err=True)
        raise typer.Exit(2)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from bench.main import main

    raise typer.Exit(main(ctx.args))


app.add_typer(alerts.watchlist_app, name="watchlist")


app.add_typer(cameras.cameras_app, name="cameras")
