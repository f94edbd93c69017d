"""`stream-worker run`: the worker (cli.py adds the command to the root app). worker/app.py parses
its flags (worker/settings.py) and is imported only when the command runs.
"""

from __future__ import annotations

import typer

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# The worker's flags come from its settings model (worker/settings.py) through
# pydantic-settings' own parser, so every setting is a flag and an env var in one place;
# typer only hands the arguments over (and `run --help` is answered by that parser).
@commands.command(
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
