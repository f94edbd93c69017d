"""`stream-worker recognize`, `produce`, `tail` and `schemas export`: the Typer layer over
tools/recognize.py, tools/produce.py, tools/tail.py and the contracts' schema export. cli.py adds them
to the root app; their bodies import the modules doing the work only when they run.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.contracts import topics
from stream_worker.service.options import (
    BOOTSTRAP_OPTION,
    CLIENT_CONFIG_OPTION,
    REPO_ROOT,
    TLS_CA_OPTION,
    TLS_CERT_OPTION,
    TLS_KEY_OPTION,
    parse_client_config,
    triton_tls,
)

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app
schemas_app = typer.Typer(help="The message contracts' JSON Schema files.", no_args_is_help=True)


# --- recognize ---------------------------------------------------------------------
@commands.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker recognize ../shared/samples/car.jpg ../shared/samples/cat.jpeg\n\n"
        "  stream-worker recognize --url triton:8001 --annotate out/ photos/*.jpg\n\n"
        "  stream-worker recognize --region us --raw --crop ../shared/plates-world/us-crops/ak848.png\n\n"
        "Exit codes: 0 done (undecodable images are reported in their line's status), 2 an image "
        "cannot be read, the --annotate folder cannot be written or the region is unknown, 3 Triton "
        "unreachable or the model not ready, 4 Triton rejected the request."
    )
)
def recognize(
    images: list[Path] = typer.Argument(
        ..., help="JPEG files (other formats re-encoded), sent together as one request."
    ),
    url: str = typer.Option(
        "localhost:8001", "--url", envvar="STREAM_WORKER_TRITON_URL", help="Triton gRPC address HOST:PORT."
    ),
    annotate: Path | None = typer.Option(
        None, "--annotate", help="Folder for copies of the images with plate boxes and texts drawn."
    ),
    timeout: float = typer.Option(60.0, "--timeout", min=0.1, help="Seconds to wait for Triton's answer."),
    region: str = typer.Option(
        "auto",
        "--region",
        help="Whose plates: a country code (us, de, ar...), eu, ru, or auto (both recognizers, all formats).",
    ),
    raw: bool = typer.Option(
        False, "--raw", help="Add each plate's unconstrained read (no format), for debugging."
    ),
    crop: bool = typer.Option(False, "--crop", help="Each image is one plate: read it whole, no detection."),
    tls_ca_file: Path | None = TLS_CA_OPTION,
    tls_cert_file: Path | None = TLS_CERT_OPTION,
    tls_key_file: Path | None = TLS_KEY_OPTION,
) -> None:
    """Recognise the plates in IMAGES for a region and print one JSON line per image."""
    from stream_worker.tools.recognize import RecognizeError, run

    tls = triton_tls(tls_ca_file, tls_cert_file, tls_key_file)
    try:
        run(
            images,
            url,
            timeout,
            annotate,
            typer.echo,
            lambda line: typer.echo(line, err=True),
            tls,
            region,
            raw,
            crop,
        )
    except RecognizeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(error.exit_code) from error


# --- produce / tail ----------------------------------------------------------------
@commands.command(
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
    topic: str = typer.Option(
        topics.FRAMES.name, "--topic", envvar="STREAM_WORKER_INPUT_TOPIC", help="Frames topic."
    ),
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


@commands.command(
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
        topics.PLATES.name, "--topic", envvar="STREAM_WORKER_OUTPUT_TOPIC", help="Topic to read."
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
    from stream_worker.service.topic_reader import TopicNotFoundError
    from stream_worker.tools.tail import (
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


# --- schemas export ---------------------------------------------------------------------------
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
    """Write schemas/*.schema.json from the pydantic models in stream_worker/contracts/."""
    from stream_worker.contracts import export_schemas

    stale = export_schemas(directory, check=check)
    verb = "stale" if check else "wrote"
    typer.echo(f"{verb}: {', '.join(stale)}" if stale else "schemas up to date")
    raise typer.Exit(1 if check and stale else 0)
