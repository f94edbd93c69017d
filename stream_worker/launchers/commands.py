"""`stream-worker triton` and `stream-worker broker`: the local servers in the foreground until
Ctrl-C or SIGTERM. cli.py adds them to the root app; their bodies import the launchers only when
they run.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.contracts.topics import TOPICS
from stream_worker.service.options import DEFAULT_REPOSITORY

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# --- triton ------------------------------------------------------------------------
@commands.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker triton\n\n"
        "  stream-worker triton --grpc-port 18001 --http-port 18000 --metrics-port 18002\n\n"
        "  stream-worker triton --host 0.0.0.0 --model-config-name gpu\n\n"
        "Exit codes: 0 stopped by Ctrl-C/SIGTERM, 1 could not start (the message says why) or "
        "exited on its own."
    )
)
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


# --- broker ------------------------------------------------------------------------
@commands.command(
    epilog=(
        "Examples: stream-worker broker --port 9092 --partitions 3; "
        "stream-worker broker --durable --data-dir broker-data\n\n"
        "Exit codes: 0 stopped by Ctrl-C/SIGTERM, 1 the broker exited on its own, 2 it could not "
        "start or create the topics."
    )
)
def broker(
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="Listen port; a free one when omitted."
    ),
    partitions: int = typer.Option(3, "--partitions", min=1, help="Partitions of each created stream."),
    topics: str = typer.Option(
        ",".join(topic.name for topic in TOPICS),
        "--topics",
        help="Comma-separated topics to create: the stack's with their retention or compaction "
        "(contracts/topics.py), any other as a plain stream.",
    ),
    durable: bool = typer.Option(
        False, "--durable", help="Keep topics, records and committed offsets on disk across restarts."
    ),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        file_okay=False,
        help="Where --durable keeps them (default ~/.local/share/stream-worker/broker); implies --durable.",
    ),
) -> None:
    """Run the local Tansu broker (in memory, or --durable) in the foreground until Ctrl-C or SIGTERM."""
    from stream_worker.launchers.broker import BrokerError, default_data_dir, run_broker

    if durable and data_dir is None:
        data_dir = default_data_dir()
    try:
        status = run_broker(port, partitions, [name.strip() for name in topics.split(",")], data_dir)
    except BrokerError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    raise typer.Exit(status)
