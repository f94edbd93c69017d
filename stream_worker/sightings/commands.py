"""`stream-worker sightings`: the sightings service (cli.py adds the command to the root app).
sightings/app.py parses its flags (the settings of settings.py) and is imported only when the
command runs.
"""

from __future__ import annotations

import typer

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# Like `run` (worker/commands.py): the flags come from the settings model (settings.py).
@commands.command(
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
