"""The `stream-worker` command line: thin commands that hand over to the module doing the work.

Each command's body only parses options and calls one function elsewhere, so the commands stay
importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.launchers import commands as launchers
from stream_worker.nets import commands as nets
from stream_worker.service.options import (
    BOOTSTRAP_OPTION,
    CLIENT_CONFIG_OPTION,
    DEFAULT_REPOSITORY,
    REPO_ROOT,
    SETTINGS_CONFIG_OPTION,
    SETTINGS_EXIT_CODES,
    SETTINGS_TIMEOUT_OPTION,
    TLS_CA_OPTION,
    TLS_CERT_OPTION,
    TLS_KEY_OPTION,
    echo_err,
    parse_client_config,
    settings_connection,
    triton_tls,
)

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


# --- recognize --------------------------------------------------------------------- (issue 2/4)
@app.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker recognize ../shared/samples/car.jpg ../shared/samples/cat.jpeg\n\n"
        "  stream-worker recognize --url triton:8001 --annotate out/ photos/*.jpg\n\n"
        "Exit codes: 0 done (undecodable images are reported in their line's status), 2 an image "
        "cannot be read or the --annotate folder cannot be written, 3 Triton unreachable or the "
        "model not ready, 4 Triton rejected the request."
    )
)
def recognize(
    images: list[Path] = typer.Argument(..., help="JPEG files, sent together as one request."),
    url: str = typer.Option(
        "localhost:8001", "--url", envvar="STREAM_WORKER_TRITON_URL", help="Triton gRPC address HOST:PORT."
    ),
    annotate: Path | None = typer.Option(
        None, "--annotate", help="Folder for copies of the images with plate boxes and texts drawn."
    ),
    timeout: float = typer.Option(60.0, "--timeout", min=0.1, help="Seconds to wait for Triton's answer."),
    tls_ca_file: Path | None = TLS_CA_OPTION,
    tls_cert_file: Path | None = TLS_CERT_OPTION,
    tls_key_file: Path | None = TLS_KEY_OPTION,
) -> None:
    """Recognise the plates in IMAGES and print one JSON line per image."""
    from stream_worker.recognize import RecognizeError, run

    tls = triton_tls(tls_ca_file, tls_cert_file, tls_key_file)
    try:
        run(images, url, timeout, annotate, typer.echo, lambda line: typer.echo(line, err=True), tls)
    except RecognizeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(error.exit_code) from error


# --- eval -------------------------------------------------------------------------------------
@app.command(
    "eval",
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker eval ../shared/evalset/scenes\n\n"
        "  stream-worker eval ../shared/evalset/boxes_only --url triton:8001 --report reports/boxes.json\n\n"
        "  stream-worker eval photos/ --min-found 0.9 --min-exact 0.7\n\n"
        "Exit codes: 0 done, 1 the folder or its labels.json unusable, Triton unreachable or failing, "
        "the report not written, 2 a --min-found/--min-exact rate not reached, 130 interrupted."
    ),
)
def evaluate(
    folder: Path = typer.Argument(
        ..., help="Folder of images with a labels.json (../shared/evalset's layout)."
    ),
    url: str | None = typer.Option(
        None,
        "--url",
        help="Triton gRPC HOST:PORT (default: export the models if needed and start the local one).",
        show_default=False,
    ),
    report: Path | None = typer.Option(None, "--report", help="Write the JSON report here."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Images per Triton request."),
    min_found: float | None = typer.Option(
        None, "--min-found", min=0.0, max=1.0, help="Exit 2 below this fraction of plate boxes found."
    ),
    min_exact: float | None = typer.Option(
        None, "--min-exact", min=0.0, max=1.0, help="Exit 2 below this fraction of texts read exactly."
    ),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Seconds to wait for each request."),
    weights_dir: Path | None = typer.Option(
        None,
        "--weights-dir",
        help="Checkpoints for the local Triton (default: $LPR_WEIGHTS_DIR).",
        show_default=False,
    ),
    repository: Path = typer.Option(
        DEFAULT_REPOSITORY, "--repository", help="Model repository (local Triton)."
    ),
    tls_ca_file: Path | None = TLS_CA_OPTION,
    tls_cert_file: Path | None = TLS_CERT_OPTION,
    tls_key_file: Path | None = TLS_KEY_OPTION,
) -> None:
    """Score a labelled photo folder through the Triton pipeline: plates found, texts read, a report."""
    from stream_worker.evaluation.runner import run_eval
    from stream_worker.evaluation.settings import EvalSettings

    tls = triton_tls(tls_ca_file, tls_cert_file, tls_key_file)
    if tls is not None and url is None:
        raise typer.BadParameter("needs --url: the local Triton speaks plain text", param_hint="'--tls-*'")
    settings = EvalSettings(
        folder=folder,
        url=url,
        tls=tls,
        repository=repository,
        weights_dir=weights_dir,
        batch_size=batch_size,
        timeout_s=timeout,
        min_found=min_found,
        min_exact=min_exact,
        report=report,
    )
    raise typer.Exit(run_eval(settings))


_add(launchers.commands, "broker")


@app.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker produce ../shared/samples/car.jpg --camera-id gate-1 --repeat 100 --fps 25\n\n"
        "  stream-worker produce clips/entrance.mp4 photos/ --camera-id entrance\n\n"
        "Exit codes: 0 every frame delivered, 1 some frame not delivered, 2 a path is not usable."
    )
)
def produce(
    paths: list[Path] = typer.Argument(
        ..., help="JPEG files, folders of JPEGs (name order), or video files."
    ),
    camera_id: str = typer.Option(..., "--camera-id", help="Record key and camera_id header."),
    fps: float = typer.Option(0.0, "--fps", min=0.0, help="Frames per second; 0 = as fast as possible."),
    repeat: int = typer.Option(1, "--repeat", min=1, help="Publish all PATHS this many times."),
    topic: str = typer.Option("frames", "--topic", envvar="STREAM_WORKER_INPUT_TOPIC", help="Frames topic."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    client_config: list[str] = CLIENT_CONFIG_OPTION,
    local_broker: bool = typer.Option(
        False,
        "--local-broker",
        envvar="STREAM_WORKER_LOCAL_BROKER",
        help="The broker is `stream-worker broker`: acks=all retries, not the idempotent producer "
        "(which that broker can lose a batch of when killed). Never for Kafka.",
    ),
) -> None:
    """Publish camera frames (key = camera id; headers camera_id, frame_id, captured_at)."""
    from stream_worker.tools.produce import FrameSourceError, check_sources, iter_frames, produce_frames

    try:
        check_sources(paths)
        report = produce_frames(
            iter_frames(paths, camera_id, repeat),
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            camera_id=camera_id,
            fps=fps,
            config=parse_client_config(client_config),
            local_broker=local_broker,
        )
    except FrameSourceError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    typer.echo(report.summary())
    raise typer.Exit(1 if report.failed else 0)


@app.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker tail --from-beginning --json | jq .plates\n\n"
        "  stream-worker tail --topic frames.dlq --from-beginning --idle-timeout 5\n\n"
        "  stream-worker tail --plate-images plates/ (with stream-worker run --plate-images)\n\n"
        "Exit codes: 0 done, 2 the topic does not exist."
    )
)
def tail(
    topic: str = typer.Option(
        "plates", "--topic", envvar="STREAM_WORKER_OUTPUT_TOPIC", help="Topic to read."
    ),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    from_beginning: bool = typer.Option(
        False, "--from-beginning", help="Start at the oldest record, not the end."
    ),
    max_messages: int | None = typer.Option(
        None, "--max-messages", min=1, help="Exit after this many records."
    ),
    idle_timeout: float | None = typer.Option(
        None, "--idle-timeout", min=0.0, help="Exit after this many seconds with nothing new."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    plate_images: Path | None = typer.Option(
        None,
        "--plate-images",
        file_okay=False,
        help="Write each plate picture seen to this directory (created): an event's as "
        "{event_id}-{plate index}.jpg, a sighting's best read's as {sighting_id}.jpg.",
    ),
    client_config: list[str] = CLIENT_CONFIG_OPTION,
) -> None:
    """Print a topic's records (events as they are; frames and dead letters as key, headers, size)."""
    from stream_worker.tools.tail import (
        TopicNotFoundError,
        format_human,
        format_json,
        save_plate_images,
        tail_records,
    )

    formatter = format_json if as_json else format_human
    if plate_images is not None:
        plate_images.mkdir(parents=True, exist_ok=True)
    records = tail_records(
        bootstrap_servers=bootstrap_servers,
        topic=topic,
        from_beginning=from_beginning,
        max_messages=max_messages,
        idle_timeout_s=idle_timeout,
        config=parse_client_config(client_config),
    )
    try:
        for record in records:
            typer.echo(formatter(record))
            for path in save_plate_images(record, plate_images) if plate_images is not None else ():
                typer.echo(f"wrote {path}", err=True)  # stderr: --json output stays one object a line
    except TopicNotFoundError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    except KeyboardInterrupt:
        records.close()


# The worker's flags come from its settings model (stream_worker/config.py) through
# pydantic-settings' own parser, so every setting is a flag and an env var in one place;
# typer only hands the arguments over (and `run --help` is answered by that parser).
@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def run(ctx: typer.Context) -> None:
    """Consume frames, recognise plates with Triton, publish PlateEvents (all flags: run --help).

    Every flag is also an env variable STREAM_WORKER_<NAME>. Exit codes: 0 stopped cleanly
    (SIGTERM/SIGINT), 1 fatal Kafka error, 2 invalid settings.
    """
    from stream_worker.worker.app import main

    raise typer.Exit(main(ctx.args))


# Like `run`: the flags come from the settings model (stream_worker/sightings/settings.py).
@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def sightings(ctx: typer.Context) -> None:
    """Read PlateEvents, publish one PlateSighting per vehicle pass (all flags: sightings --help).

    Every flag is also an env variable STREAM_WORKER_SIGHTINGS_<NAME>. Exit codes: 0 stopped
    cleanly (SIGTERM/SIGINT), 1 fatal Kafka error, 2 invalid settings.
    """
    from stream_worker.sightings.app import main

    raise typer.Exit(main(ctx.args))


# Like `sightings`: the flags come from the settings model (stream_worker/alerts/settings.py).
@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def alerts(ctx: typer.Context) -> None:
    """Read PlateEvents, publish a PlateAlert when a watch-listed plate passes (all flags: alerts --help).

    One alert per camera, entry and vehicle pass, on its first matching read. Every flag is also an
    env variable STREAM_WORKER_ALERTS_<NAME>. Exit codes: 0 stopped cleanly (SIGTERM/SIGINT), 1 fatal
    Kafka error, 2 invalid settings.
    """
    from stream_worker.alerts.app import main

    raise typer.Exit(main(ctx.args))


schemas_app = typer.Typer(help="The message contracts' JSON Schema files.", no_args_is_help=True)
app.add_typer(schemas_app, name="schemas")


@schemas_app.command(
    "export",
    epilog=(
        "Examples:\n\n"
        "  stream-worker schemas export\n\n"
        "  stream-worker schemas export --check\n\n"
        "Exit codes: 0 written or up to date, 1 with --check: some file is stale."
    ),
)
def schemas_export(
    directory: Path = typer.Option(REPO_ROOT / "schemas", "--dir", help="Where the schema files go."),
    check: bool = typer.Option(False, "--check", help="Only report stale files (exit 1), write nothing."),
) -> None:
    """Write schemas/*.schema.json from the pydantic models in stream_worker/contracts.py."""
    from stream_worker.contracts import export_schemas

    stale = export_schemas(directory, check=check)
    verb = "stale" if check else "wrote"
    typer.echo(f"{verb}: {', '.join(stale)}" if stale else "schemas up to date")
    raise typer.Exit(1 if check and stale else 0)


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


# --- watchlist --------------------------------------------------------------------- (issue 20)
watchlist_app = typer.Typer(
    help="Manage the watch lists: plates to alert on, kept on the compacted topic `watchlist`.",
    epilog=(
        "Examples:\n\n"
        "  stream-worker watchlist add B840CK197 --list stolen --label 'grey van'\n\n"
        "  stream-worker watchlist import plates.csv\n\n"
        "  stream-worker watchlist list --json"
    ),
    no_args_is_help=True,
)
app.add_typer(watchlist_app, name="watchlist")

WATCHLIST_TOPIC_OPTION = typer.Option(
    "watchlist", "--topic", envvar="STREAM_WORKER_WATCHLIST_TOPIC", help="Compacted watch-list topic."
)


@watchlist_app.command(
    "add",
    epilog=(
        "Examples:\n\n"
        "  stream-worker watchlist add B840CK197 --list stolen --label 'grey van'\n\n"
        "  stream-worker watchlist add 'в 840 ск 197' --list residents --max-distance 0 "
        "--expires-at 2027-01-01\n\n" + SETTINGS_EXIT_CODES
    ),
)
def watchlist_add(
    plate: str = typer.Argument(
        ..., help="The plate; Cyrillic letters, lowercase, spaces and dashes are normalised."
    ),
    list_name: str = typer.Option(
        ..., "--list", help="Watch list name, a lowercase slug (stolen, residents)."
    ),
    label: str | None = typer.Option(None, "--label", help="Free text shown with the alert."),
    max_distance: float | None = typer.Option(
        None,
        "--max-distance",
        min=0.0,
        help="Largest weighted edit distance that still matches (0: exact; default: the service's).",
        show_default=False,
    ),
    expires_at: str | None = typer.Option(
        None, "--expires-at", help="ISO-8601 date or date-time (naive = UTC) the entry stops matching."
    ),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = WATCHLIST_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Put a plate on a watch list (replaces the plate's entry if it has one)."""
    from stream_worker.alerts.commands import add

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(add(connection, plate, list_name, label, max_distance, expires_at, typer.echo, echo_err))


@watchlist_app.command(
    "remove",
    epilog=("Example: stream-worker watchlist remove B840CK197\n\n" + SETTINGS_EXIT_CODES),
)
def watchlist_remove(
    plate: str = typer.Argument(..., help="The plate, in any spelling."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = WATCHLIST_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Take a plate off the watch list (writes its tombstone)."""
    from stream_worker.alerts.commands import remove

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(remove(connection, plate, typer.echo, echo_err))


@watchlist_app.command(
    "list",
    epilog=(
        "Examples:\n\n  stream-worker watchlist list\n\n  stream-worker watchlist list --json | jq .plate\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
def watchlist_list(
    as_json: bool = typer.Option(False, "--json", help="One WatchEntry JSON object per line."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = WATCHLIST_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Print every entry, by list then plate (undecodable records are reported on stderr)."""
    from stream_worker.alerts.commands import show

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(show(connection, as_json, typer.echo, echo_err))


@watchlist_app.command(
    "import",
    epilog=(
        "Example: stream-worker watchlist import plates.csv\n\n"
        "Columns: plate,list,label,max_distance,expires_at (header row required; plate and list "
        "mandatory). All or nothing: any bad row refuses the whole file, every bad row is named.\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
def watchlist_import(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="UTF-8 CSV file."),
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = WATCHLIST_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Add or replace the entries of a CSV file (plates not in the file stay)."""
    from stream_worker.alerts.commands import import_csv

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(import_csv(connection, file, typer.echo, echo_err))


@watchlist_app.command(
    "export",
    epilog=("Example: stream-worker watchlist export > plates.csv\n\n" + SETTINGS_EXIT_CODES),
)
def watchlist_export(
    bootstrap_servers: str = BOOTSTRAP_OPTION,
    topic: str = WATCHLIST_TOPIC_OPTION,
    client_config: list[str] = SETTINGS_CONFIG_OPTION,
    timeout: float = SETTINGS_TIMEOUT_OPTION,
) -> None:
    """Write the watch list as CSV to stdout, in the columns `import` reads."""
    from stream_worker.alerts.commands import export_csv

    connection = settings_connection(bootstrap_servers, topic, client_config, timeout)
    raise typer.Exit(export_csv(connection, typer.echo, echo_err))


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
