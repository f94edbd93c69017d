"""`stream-worker visits`: the visits service (cli.py adds the command to the root app). visits/app.py
parses its flags (the settings of settings.py) and is imported only when the command runs."""

from __future__ import annotations

import typer

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


@commands.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def visits(ctx: typer.Context) -> None:
    """Read PlateSightings, pair a site's entries and exits into visits (all flags: visits --help).

    Publishes PlateVisit events (opened, closed, overstay) on the visits topic. Which cameras are a
    site's entry or exit: `cameras set` (the settings' `site`). Every flag is also an env variable
    STREAM_WORKER_VISITS_<NAME>. Exit codes: 0 stopped cleanly (SIGTERM/SIGINT), 1 fatal Kafka error,
    2 invalid settings.
    """
    from stream_worker.visits.app import main

    raise typer.Exit(main(ctx.args))
