"""The `stream-worker` command line: thin commands that hand over to the module doing the work.

Each command's body only parses options and calls one function elsewhere, so the commands stay
importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    name="stream-worker",
    help="Read licence plates from Kafka camera feeds with an NVIDIA Triton pipeline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="Prepare the model repository's artifacts.", no_args_is_help=True)
app.add_typer(models_app, name="models")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPOSITORY = REPO_ROOT / "model_repository"


# --- models prepare ---------------------------------------------------------------- (issue 2)
# --- triton ------------------------------------------------------------------------ (issue 2)
@app.command()
def triton(
    repository: Path = typer.Option(DEFAULT_REPOSITORY, "--repository", help="Triton model repository."),
    grpc_port: int = typer.Option(8001, "--grpc-port", help="gRPC port (clients, the worker)."),
    http_port: int = typer.Option(8000, "--http-port", help="HTTP port (health, statistics)."),
    metrics_port: int = typer.Option(8002, "--metrics-port", help="Prometheus metrics port."),
    model_config_name: str | None = typer.Option(
        None, "--model-config-name", help="Use each model's configs/NAME.pbtxt (e.g. gpu)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (0.0.0.0: all interfaces)."),
) -> None:
    """Run the local Triton (from the nvidia-pytriton wheel) in the foreground until Ctrl-C."""
    from stream_worker.launchers.triton import serve

    raise typer.Exit(serve(repository, grpc_port, http_port, metrics_port, model_config_name, host))


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
    images: list[Path] = typer.Argument(..., help="Image files (JPEG, PNG, ...) sent as one request."),
    url: str = typer.Option(
        "localhost:8001", "--url", envvar="STREAM_WORKER_TRITON_URL", help="Triton gRPC address HOST:PORT."
    ),
    annotate: Path | None = typer.Option(
        None, "--annotate", help="Folder for copies of the images with plate boxes and texts drawn."
    ),
    timeout: float = typer.Option(60.0, "--timeout", min=0.1, help="Seconds to wait for Triton's answer."),
) -> None:
    """Recognise the plates in IMAGES and print one JSON line per image."""
    from stream_worker.recognize import RecognizeError, run

    try:
        run(images, url, timeout, annotate, emit=typer.echo, warn=lambda line: typer.echo(line, err=True))
    except RecognizeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(error.exit_code) from error


# --- broker / produce / tail / run ------------------------------------------------- (issue 3)
# --- demo -------------------------------------------------------------------------- (issue 4)
# --- bench ------------------------------------------------------------------------- (issue 5)
