"""`stream-worker alerts` (the alerts service) and the `stream-worker watchlist` group: the Typer
layer, which cli.py adds to the root app.

The watchlist commands' work is in alerts/watchlist_actions.py, which imports the Kafka client and the
store at module level; this module imports only typer and the shared options, and the command
bodies import commands.py and app.py only when they run, so `--help` needs neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from stream_worker.contracts import topics
from stream_worker.service.options import SETTINGS_EXIT_CODES, echo_err, topic_command

if TYPE_CHECKING:
    from stream_worker.service.options import Connection

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# --- alerts ------------------------------------------------------------------------
# Like `sightings` (sightings/commands.py): the flags come from the settings model (settings.py).
@commands.command(
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


# --- watchlist ---------------------------------------------------------------------
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

WATCHLIST_TOPIC_OPTION = typer.Option(
    topics.WATCHLIST.name,
    "--topic",
    envvar="STREAM_WORKER_WATCHLIST_TOPIC",
    help="Compacted watch-list topic.",
)
watchlist_command = topic_command(WATCHLIST_TOPIC_OPTION)


@watchlist_app.command(
    "add",
    epilog=(
        "Examples:\n\n"
        "  stream-worker watchlist add B840CK197 --list stolen --label 'grey van'\n\n"
        "  stream-worker watchlist add 'в 840 ск 197' --list residents --max-distance 0 "
        "--expires-at 2027-01-01\n\n"
        "  stream-worker watchlist add A123BC77 --list deliveries --allow --overstay-s 1800\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
@watchlist_command
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
    allow: bool = typer.Option(
        False,
        "--allow",
        help="A known vehicle, never alerted: the list is an allow list (notify's unknown-vehicle rule).",
    ),
    overstay_s: float | None = typer.Option(
        None,
        "--overstay-s",
        min=0.0,
        help="The plate's own visit limit (visits): its visit past it raises an overstay, whatever its "
        "site's limit; 0: never.",
        show_default=False,
    ),
    *,
    connection: Connection,
) -> int:
    """Put a plate on a watch list (replaces the plate's entry if it has one)."""
    from stream_worker.alerts.watchlist_actions import add

    return add(
        connection, plate, list_name, label, max_distance, expires_at, typer.echo, echo_err, allow, overstay_s
    )


@watchlist_app.command(
    "remove",
    epilog=("Example: stream-worker watchlist remove B840CK197\n\n" + SETTINGS_EXIT_CODES),
)
@watchlist_command
def watchlist_remove(
    plate: str = typer.Argument(..., help="The plate, in any spelling."),
    *,
    connection: Connection,
) -> int:
    """Take a plate off the watch list (writes its tombstone)."""
    from stream_worker.alerts.watchlist_actions import remove

    return remove(connection, plate, typer.echo, echo_err)


@watchlist_app.command(
    "list",
    epilog=(
        "Examples:\n\n  stream-worker watchlist list\n\n  stream-worker watchlist list --json | jq .plate\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
@watchlist_command
def watchlist_list(
    as_json: bool = typer.Option(False, "--json", help="One WatchEntry JSON object per line."),
    *,
    connection: Connection,
) -> int:
    """Print every entry, by list then plate (undecodable records are reported on stderr)."""
    from stream_worker.alerts.watchlist_actions import show

    return show(connection, as_json, typer.echo, echo_err)


@watchlist_app.command(
    "import",
    epilog=(
        "Example: stream-worker watchlist import plates.csv\n\n"
        "Columns: plate,list,label,max_distance,expires_at,kind (header row required; plate and list "
        "mandatory; kind: watch, the default, or allow). All or nothing: any bad row refuses the "
        "whole file, every bad row is named.\n\n" + SETTINGS_EXIT_CODES
    ),
)
@watchlist_command
def watchlist_import(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="UTF-8 CSV file."),
    *,
    connection: Connection,
) -> int:
    """Add or replace the entries of a CSV file (plates not in the file stay)."""
    from stream_worker.alerts.watchlist_actions import import_csv

    return import_csv(connection, file, typer.echo, echo_err)


@watchlist_app.command(
    "export",
    epilog=("Example: stream-worker watchlist export > plates.csv\n\n" + SETTINGS_EXIT_CODES),
)
@watchlist_command
def watchlist_export(
    *,
    connection: Connection,
) -> int:
    """Write the watch list as CSV to stdout, in the columns `import` reads."""
    from stream_worker.alerts.watchlist_actions import export_csv

    return export_csv(connection, typer.echo, echo_err)
