"""The `stream-worker` command line: thin commands that hand over to the module doing the work.

Each command's body only parses options and calls one function elsewhere, so the commands stay
importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.alerts import cli as alerts
from stream_worker.evaluation import commands as evaluation
from stream_worker.launchers import commands as launchers
from stream_worker.nets import commands as nets
from stream_worker.service.options import (
    BOOTSTRAP_OPTION,
    DEFAULT_REPOSITORY,
    REPO_ROOT,
    SETTINGS_CONFIG_OPTION,
    SETTINGS_EXIT_CODES,
    SETTINGS_TIMEOUT_OPTION,
    echo_err,
    settings_connection,
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


# --- cameras ----------------------------------------------------------------------- (issue 21)
cameras_app = typer.Typer(
    help="Manage each camera's settings (masks, zones, minimum plate width, plate pictures), kept on "
    "the compacted topic `cameras`.",
    epilog=(
        "Examples:\n\n"
        "  stream-worker cameras set gate-1 --file gate-1.yaml\n\n"
        "  stream-worker cameras get gate-1\n\n"
        "  stream-worker cameras list --json\n\n"
        "  stream-worker cameras draw frame.jpg --file gate-1.yaml --out gate-1.png"
    ),
    no_args_is_help=True,
)
app.add_typer(cameras_app, name="cameras")

CAMERAS_TOPIC_OPTION = typer.Option(
    "cameras", "--topic", envvar="STREAM_WORKER_CAMERAS_TOPIC", help="Compacted camera-settings topic."
)


@cameras_app.command(
    "set",
    epilog=(
        "Example: stream-worker cameras set gate-1 --file gate-1.yaml\n\n"
        "The file (JSON or YAML) replaces the camera's settings whole: display_name, masks (polygons "
        "of [x, y] points in 0..1), zones ({name, polygon}), min_plate_width (pixels), plate_images "
        "(true/false); see README.md, Camera settings. A bad file is refused whole, each problem "
        "named.\n\n" + SETTINGS_EXIT_CODES
    ),
)
def cameras_set(
    camera: str = typer.Argument(..., help="The camera id, as in the frames' camera_id."),
    file: Path = typer.Option(
        ..., "--file", "-f", exists=True, dir_okay=False, help="Settings file, JSON or YAML."
    ),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = CAMERAS_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Give a camera the settings of a file (replaces any it had)."""
    from stream_worker.cameras.commands import set_settings

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(set_settings(connection, camera, file, typer.echo, echo_err))


@cameras_app.command(
    "get",
    epilog=(
        "Example: stream-worker cameras get gate-1 > gate-1.json  (a file `set` takes back)\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
def cameras_get(
    camera: str = typer.Argument(..., help="The camera id."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = CAMERAS_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Print a camera's settings as JSON (the defaults when it has none)."""
    from stream_worker.cameras.commands import get_settings

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(get_settings(connection, camera, typer.echo, echo_err))


@cameras_app.command(
    "list",
    epilog=(
        "Examples:\n\n  stream-worker cameras list\n\n  stream-worker cameras list --json | jq .camera_id\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
def cameras_list(
    as_json: bool = typer.Option(False, "--json", help="One {camera_id, settings} JSON object per line."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = CAMERAS_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Print every camera that has settings, by id (undecodable records are reported on stderr)."""
    from stream_worker.cameras.commands import list_settings

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(list_settings(connection, as_json, typer.echo, echo_err))


@cameras_app.command(
    "remove",
    epilog=("Example: stream-worker cameras remove gate-1\n\n" + SETTINGS_EXIT_CODES),
)
def cameras_remove(
    camera: str = typer.Argument(..., help="The camera id."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = CAMERAS_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Put a camera back to the defaults (writes its tombstone)."""
    from stream_worker.cameras.commands import remove

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(remove(connection, camera, typer.echo, echo_err))


@cameras_app.command(
    "draw",
    epilog=(
        "Examples:\n\n"
        "  stream-worker cameras draw frame.jpg --file gate-1.yaml --out gate-1.png  (check a file "
        "before `set`)\n\n"
        "  stream-worker cameras draw frame.jpg --camera gate-1 --out gate-1.jpg  (what is stored)\n\n"
        "Masks are filled dark red and outlined; each zone is outlined in its own colour with its "
        "name inside near its first point. The image itself is never changed. The file is checked "
        "exactly as `set` checks it.\n\n"
        "Exit codes: 0 written, 1 the broker failed or timed out (--camera), 2 bad input (the "
        "image, the settings file, the camera id or the output; nothing written)."
    ),
)
def cameras_draw(
    image: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="A frame of the camera (JPEG, PNG, ...)."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        dir_okay=False,
        help="Where to write the copy; .jpg/.jpeg or .png chooses the format.",
    ),
    file: Path | None = typer.Option(
        None, "--file", "-f", exists=True, dir_okay=False, help="Settings file (JSON or YAML) to draw."
    ),
    camera: str | None = typer.Option(None, "--camera", "-c", help="Draw this camera's stored settings."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = CAMERAS_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Draw a camera's masks and zones over a frame, from a settings file or the topic."""
    from stream_worker.cameras.commands import draw

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(draw(image, out, file, camera, connection, typer.echo, echo_err))
