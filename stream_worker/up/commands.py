"""`stream-worker up` (cli.py adds the command to the root app). The body imports app.py, and
through it the launchers and the Kafka client, only when it runs."""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.service.options import REPOSITORY_OPTION, TRITON_URL_OPTION, WEIGHTS_DIR_OPTION

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# --- up ----------------------------------------------------------------------------
@commands.command(
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker up\n\n"
        "  stream-worker up --data-dir /srv/stream-worker --console-host 0.0.0.0\n\n"
        "  stream-worker cameras set gate --file gate.yaml   # then, in another terminal: a camera\n\n"
        "Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 could not start (the message says why)."
    )
)
def up(
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        file_okay=False,
        help="Where everything is kept across restarts: the broker's topics, the history database, "
        "the console's users, the logs (default ~/.local/share/stream-worker).",
        show_default=False,
    ),
    broker_port: int = typer.Option(
        9092, "--broker-port", min=1, max=65535, help="The local broker's port (cameras, tail, produce)."
    ),
    console_host: str = typer.Option(
        "127.0.0.1", "--console-host", help="Address the console binds (0.0.0.0: every interface)."
    ),
    console_port: int = typer.Option(8080, "--console-port", min=1, max=65535, help="The console's port."),
    triton_url: str | None = TRITON_URL_OPTION,
    weights_dir: Path | None = WEIGHTS_DIR_OPTION,
    repository: Path = REPOSITORY_OPTION,
    partitions: int = typer.Option(3, "--partitions", min=1, help="Partitions of each stream topic created."),
    frames_retention: str = typer.Option(
        "1h",
        "--frames-retention",
        help="How long the broker keeps the camera frames (90s, 3m, 1h, 2d): they are most of the disk "
        "used. The other topics keep theirs (contracts/topics.py), plates aside (--plates-retention).",
    ),
    plates_retention: str | None = typer.Option(
        None,
        "--plates-retention",
        help="How long the broker keeps the plates the worker read, each with its picture (the second "
        "largest topic; the sightings, alerts and the history keep the results): default the frames' "
        "retention, so that the one box's replay window is one figure.",
    ),
    session_timeout_ms: int = typer.Option(
        10000,
        "--session-timeout-ms",
        min=1000,
        help="The services' consumer group session: a service that died gets its partitions back this "
        "soon after its restart.",
    ),
) -> None:
    """Run the whole stack on this machine until Ctrl-C: broker, Triton, worker, services, store, console.

    The local broker keeps its topics in the data directory, the store its database; a child that
    dies is started again. Cameras are added in the console or with `stream-worker cameras set`.
    """
    from stream_worker.up.app import UpOptions, run_up
    from stream_worker.up.options import default_data_dir, duration_ms

    try:
        frames_retention_ms = duration_ms(frames_retention)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--frames-retention") from None
    try:
        plates_retention_ms = duration_ms(plates_retention) if plates_retention else frames_retention_ms
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--plates-retention") from None

    options = UpOptions(
        data_dir=(data_dir or default_data_dir()).expanduser().resolve(),
        broker_port=broker_port,
        console_host=console_host,
        console_port=console_port,
        triton_url=triton_url,
        repository=repository,
        weights_dir=weights_dir,
        partitions=partitions,
        frames_retention_ms=frames_retention_ms,
        plates_retention_ms=plates_retention_ms,
        session_timeout_ms=session_timeout_ms,
    )
    raise typer.Exit(run_up(options))
