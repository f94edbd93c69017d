"""The connector's commands, which cli.py adds to the root app:

- `stream-worker connect [flags]`: `commands` (`_add(connector.commands, "connect")`); the flags
  come from the settings model (settings.py), as `sightings`;
- `stream-worker cameras status [--json] [--since SECONDS]`: `status_commands`, whose "status"
  joins the `cameras` group
  (`cameras.cameras_app.registered_commands.extend(connector.status_commands.registered_commands)`):
  every camera's state, rates and last error, read from the status topic (status_view.py), or
  from the console of the running `up` that gave the defaults (status_console.py).

Only typer and the shared options are imported here, so `--help` needs neither PyAV nor Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from stream_worker.cameras.status import STATUS_WINDOW_S
from stream_worker.contracts import topics
from stream_worker.service.options import echo_err, topic_command

if TYPE_CHECKING:
    from stream_worker.contracts.running_up import RunningUp
    from stream_worker.service.options import Connection

commands = typer.Typer()  # `connect`
status_commands = typer.Typer()  # `cameras status`

# The options of `topic_command` that say where to read: given, the console of `up` is not asked.
CONNECTION_PARAMETERS = ("bootstrap_servers", "topic", "client_config")
STATUS_TOPIC_OPTION = typer.Option(
    topics.CAMERA_STATUS.name,
    "--topic",
    envvar="STREAM_WORKER_CONNECT_STATUS_TOPIC",
    help="Compacted camera-status topic the connector writes.",
)


@commands.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def connect(ctx: typer.Context) -> None:
    """Read the cameras that have a source (RTSP, HTTP, a video file) into the frames topic,
    sampled to their fps and gated by motion (all flags: connect --help).

    Every flag is also an env variable STREAM_WORKER_CONNECT_<NAME>; camera credentials are the env
    variables the sources name (${NAME}). Exit codes: 0 stopped cleanly (SIGTERM/SIGINT), 1 fatal
    Kafka error, 2 invalid settings.
    """
    from stream_worker.connector.app import main

    raise typer.Exit(main(ctx.args))


@status_commands.command(
    "status",
    epilog=(
        "Examples:\n\n  stream-worker cameras status\n\n  stream-worker cameras status --json | jq .state\n\n"
        "  stream-worker cameras status --since 0\n\n"
        "Exit codes: 0 done, 1 the broker failed or timed out, 2 bad input."
    ),
)
@topic_command(STATUS_TOPIC_OPTION)
def cameras_status(
    context: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="One status JSON object per camera and line."),
    since: float = typer.Option(
        STATUS_WINDOW_S,
        "--since",
        min=0,
        metavar="SECONDS",
        help="Read the records of the last SECONDS only (every running connector renews each of its "
        "cameras every 5 s); 0: the whole topic, slow on a long history.",
    ),
    *,
    connection: Connection,
) -> int:
    """Print each camera's state, frame rates, reconnects and last error, as the connector replica
    reading it last reported (a record not renewed for 15 s is marked stale).

    Under `stream-worker up`, with none of --bootstrap-servers, --topic, -X given and --since at
    most 20, the states come from up's console, which follows the topic (no broker read); if it
    does not answer, a note says why and the topic is read."""
    from stream_worker.connector.status_view import print_status

    window = since if since > 0 else None
    return print_status(
        connection.bootstrap_servers,
        connection.topic,
        connection.config,
        connection.timeout_s,
        as_json,
        typer.echo,
        echo_err,
        window,
        _running_console(context, window),
    )


def _running_console(context: typer.Context, window: float | None) -> RunningUp | None:
    """The running `up` whose console to ask, when the broker and the topic are its defaults (no
    flag, no environment variable gave them) and the window is one the console holds: the last
    STATUS_WINDOW_S, read at its start and followed since."""
    from stream_worker.contracts.running_up import running_up

    if window is None or window > STATUS_WINDOW_S:
        return None
    for name in CONNECTION_PARAMETERS:
        source = context.get_parameter_source(name)
        if source is None or source.name not in ("DEFAULT", "DEFAULT_MAP"):
            return None
    found = running_up()
    return found if found is not None and found.console_url is not None else None
