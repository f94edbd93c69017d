"""`stream-worker notify` (the notify service) and its `targets` group: the Typer layer, which cli.py
adds to the root app.

`notify` alone, or followed by flags, runs the service (its flags come from the settings model,
like `alerts`'); `notify targets ...` manages the targets. The command bodies import app.py and
commands.py only when they run, so `--help` needs neither the Kafka client nor httpx.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
import typer
from typer.core import TyperGroup

from stream_worker.contracts import topics
from stream_worker.service.options import SETTINGS_EXIT_CODES, echo_err, topic_command

if TYPE_CHECKING:
    from stream_worker.service.options import Connection

SERVICE_ARGS = "notify_service_args"


class _ServiceOrGroup(TyperGroup):
    """A group whose first argument, unless it names a subcommand, is the service's own flags
    (`--help` included: the service's flags are the long list)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            return super().parse_args(ctx, args)
        ctx.meta[SERVICE_ARGS] = list(args)
        return super().parse_args(ctx, [])


notify_app = typer.Typer(
    cls=_ServiceOrGroup,
    invoke_without_command=True,
    add_help_option=False,
    help="Deliver alerts to webhooks (notify --help: the service's flags; notify targets --help: targets).",
)


@notify_app.callback()
def notify(ctx: typer.Context) -> None:
    """Deliver PlateAlerts to the targets of `notify-targets` (all flags: notify --help).

    Each alert goes to every target whose rules it passes, signed, retried with a capped backoff,
    dead-lettered to notify.dlq after the retry budget; offsets are committed once every target
    settled the alert. Every flag is also an env variable STREAM_WORKER_NOTIFY_<NAME>. Exit codes:
    0 stopped cleanly (SIGTERM/SIGINT), 1 fatal Kafka error, 2 invalid settings.
    """
    if ctx.invoked_subcommand is not None:
        return
    from stream_worker.notify.app import main

    raise typer.Exit(main(ctx.meta.get(SERVICE_ARGS, [])))


targets_app = typer.Typer(
    help="Manage the notification targets (webhooks), kept on the compacted topic `notify-targets`.",
    epilog=(
        "Examples:\n\n"
        "  stream-worker notify targets set gate --file gate.yaml\n\n"
        "  stream-worker notify targets get gate\n\n"
        "  stream-worker notify targets list --json"
    ),
    no_args_is_help=True,
)
notify_app.add_typer(targets_app, name="targets")

TARGETS_TOPIC_OPTION = typer.Option(
    topics.NOTIFY_TARGETS.name,
    "--topic",
    envvar="STREAM_WORKER_NOTIFY_TARGETS_TOPIC",
    help="Compacted topic of the targets.",
)
targets_command = topic_command(TARGETS_TOPIC_OPTION)


@targets_app.command(
    "set",
    epilog=(
        "Example: stream-worker notify targets set gate --file gate.yaml\n\n"
        "The file (JSON or YAML) replaces the target whole: type (webhook), url (a secret one whole "
        "as ${NAME}), secret (only as ${NAME}, one of notify's target secrets: a missing one is "
        "warned of), timeout_s, enabled, rules (lists, cameras, zones, "
        "directions, min_confidence, timezone, active_hours, cooldown_s); see "
        "docs/notifications.md. A bad file is refused whole, each problem named.\n\n" + SETTINGS_EXIT_CODES
    ),
)
@targets_command
def targets_set(
    name: str = typer.Argument(..., help="The target's name (lowercase letters, digits, . _ -)."),
    file: Path = typer.Option(
        ..., "--file", "-f", exists=True, dir_okay=False, help="Target file, JSON or YAML."
    ),
    status_topic: str = typer.Option(
        topics.NOTIFY_STATUS.name,
        "--status-topic",
        envvar="STREAM_WORKER_NOTIFY_STATUS_TOPIC",
        help="Where notify says which target secrets it has (names only): a missing one is warned of.",
    ),
    *,
    connection: Connection,
) -> int:
    """Define a target from a file (replaces any target of that name); warns of a secret it names
    that notify lacks."""
    from stream_worker.notify.actions import set_target

    return set_target(connection, name, file, typer.echo, echo_err, status_topic)


@targets_app.command(
    "get",
    epilog=(
        "Example: stream-worker notify targets get gate > gate.json  (a file `set` takes back)\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
@targets_command
def targets_get(
    name: str = typer.Argument(..., help="The target's name."),
    *,
    connection: Connection,
) -> int:
    """Print a target as JSON (its secret as the ${NAME} it is stored as)."""
    from stream_worker.notify.actions import get_target

    return get_target(connection, name, typer.echo, echo_err)


@targets_app.command(
    "list",
    epilog=(
        "Examples:\n\n  stream-worker notify targets list\n\n"
        "  stream-worker notify targets list --json | jq .name\n\n" + SETTINGS_EXIT_CODES
    ),
)
@targets_command
def targets_list(
    as_json: bool = typer.Option(False, "--json", help="One {name, target} JSON object per line."),
    *,
    connection: Connection,
) -> int:
    """Print every target, by name (undecodable records are reported on stderr)."""
    from stream_worker.notify.actions import list_targets

    return list_targets(connection, as_json, typer.echo, echo_err)


@targets_app.command(
    "remove",
    epilog=("Example: stream-worker notify targets remove gate\n\n" + SETTINGS_EXIT_CODES),
)
@targets_command
def targets_remove(
    name: str = typer.Argument(..., help="The target's name."),
    *,
    connection: Connection,
) -> int:
    """Remove a target (writes its tombstone); alerts queued for it are dropped."""
    from stream_worker.notify.actions import remove

    return remove(connection, name, typer.echo, echo_err)


dlq_app = typer.Typer(
    help="The dead letters (notify.dlq): what a target did not take; send them again.",
    epilog="Example:\n\n  stream-worker notify dlq replay --target gate --since 2026-12-06T10:00:00Z",
    no_args_is_help=True,
)
notify_app.add_typer(dlq_app, name="dlq")


@dlq_app.command(
    "replay",
    epilog=(
        "Examples:\n\n  stream-worker notify dlq replay --target gate\n\n"
        "  stream-worker notify dlq replay --since 2026-12-06T10:00:00Z\n\n"
        "Each dead letter (each target and event once) goes to its target again, through the running "
        "notify service, with the same event id; the dead letters stay in the DLQ.\n\n" + SETTINGS_EXIT_CODES
    ),
)
@topic_command(
    typer.Option(
        topics.NOTIFY_DLQ.name,
        "--dlq-topic",
        envvar="STREAM_WORKER_NOTIFY_DLQ_TOPIC",
        help="The dead letters' topic.",
    )
)
def dlq_replay(
    target: str | None = typer.Option(None, "--target", help="Only this target's dead letters."),
    since: str | None = typer.Option(
        None, "--since", help="Only those dead-lettered at or after this ISO 8601 time (UTC unless it says)."
    ),
    replays_topic: str = typer.Option(
        topics.NOTIFY_REPLAYS.name,
        "--replays-topic",
        envvar="STREAM_WORKER_NOTIFY_REPLAYS_TOPIC",
        help="Where notify takes replays from.",
    ),
    *,
    connection: Connection,
) -> int:
    """Send dead-lettered deliveries again (same event ids)."""
    from stream_worker.notify.actions import replay

    return replay(connection, replays_topic, target, since, typer.echo, echo_err)
