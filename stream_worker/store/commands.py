"""`stream-worker store` (the history store and its console; `store migrate`, `store forget`,
`store sessions revoke`, `store corrections export`), `stream-worker search` and `stream-worker
report` (cli.py adds them to the root app). The work is imported only when a command runs:
store/app.py for the service, retention.py for forget, sessions.py for sessions revoke,
corrections_export.py for corrections export, search_output.py for search, report_output.py for
report.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import typer
from typer.core import TyperGroup

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app

RUN = "run"


class RunByDefault(TyperGroup):
    """`stream-worker store [FLAGS]` runs the service (`store run`); `store migrate|forget` the others."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = [RUN, *args]
        return super().parse_args(ctx, args)


store_app = typer.Typer(
    cls=RunByDefault,
    help="The history store: sightings and alerts into a database, with the console (store --help).",
    epilog=(
        "Examples:\n\n"
        "  stream-worker store --bootstrap-servers kafka:9092\n\n"
        "  stream-worker store forget B840CK197 --yes"
    ),
    add_completion=False,
)


@store_app.command(
    RUN,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def run(ctx: typer.Context) -> None:
    """Store sightings and alerts, serve the console (the default; all flags: store run --help).

    Every flag is also an env variable STREAM_WORKER_STORE_<NAME>. Exit codes: 0 stopped cleanly
    (SIGTERM/SIGINT), 1 fatal Kafka error or database unreachable at start, 2 invalid settings.
    """
    from stream_worker.store.app import main

    raise typer.Exit(main(ctx.args))


def _store_overrides(database_url: str | None, data_dir: str | None) -> dict[str, object]:
    """The flags given; with neither flag nor their environment variables, the data directory of
    the running `stream-worker up` (contracts/running_up.py), if one runs."""
    from stream_worker.contracts.running_up import running_up

    overrides: dict[str, object] = {}
    if database_url:
        overrides["database_url"] = database_url
    if data_dir:
        overrides["data_dir"] = data_dir
    if not overrides and not any(os.environ.get(f"{STORE_ENV_PREFIX}{name}") for name in STORE_ENV_NAMES):
        found = running_up()
        if found is not None:
            overrides["data_dir"] = str(found.data_dir)
    return overrides


def _database(database_url: str | None, data_dir: str | None) -> Any:
    from stream_worker.store.database import Database, DatabaseError
    from stream_worker.store.settings import load_settings

    overrides = _store_overrides(database_url, data_dir)
    try:
        settings = load_settings(None, **overrides)
        database = Database(settings.resolved_database_url())
        database.migrate()
    except (ValueError, DatabaseError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(3) from None
    return database


STORE_ENV_PREFIX = "STREAM_WORKER_STORE_"
STORE_ENV_NAMES = ("DATABASE_URL", "DATA_DIR")
DATABASE_URL = typer.Option(
    None,
    "--database-url",
    help="As the store's (env STREAM_WORKER_STORE_DATABASE_URL); default: SQLite in --data-dir.",
)
DATA_DIR = typer.Option(
    None,
    "--data-dir",
    help="As the store's (env STREAM_WORKER_STORE_DATA_DIR); default: the running `stream-worker up`'s.",
)


@store_app.command("migrate")
def migrate(database_url: str | None = DATABASE_URL, data_dir: str | None = DATA_DIR) -> None:
    """Create or upgrade the database's schema (the store does it at start too). Exit 3: unreachable.

    Example: stream-worker store migrate --database-url 'postgresql://store:${POSTGRES_PASSWORD}@db/history'
    """
    database = _database(database_url, data_dir)
    from stream_worker.store.database import DatabaseError

    try:
        revision = database.migrate()
    except DatabaseError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(3) from None
    typer.echo(f"{database.safe_url}: schema at revision {revision}")


@store_app.command("forget")
def forget(
    plate: str = typer.Argument(..., help="The plate whose history is erased (look-alike reads too)."),
    yes: bool = typer.Option(False, "--yes", help="Do it without asking."),
    database_url: str | None = DATABASE_URL,
    data_dir: str | None = DATA_DIR,
) -> None:
    """Erase a plate's sightings, pictures and alerts (plates are personal data); audited.

    Example: stream-worker store forget B840CK197 --yes. Exit codes: 0 erased, 1 declined,
    2 bad plate, 3 database unreachable.
    """
    from stream_worker.contracts.watchlist import normalise_plate, plate_problem
    from stream_worker.store.retention import forget as erase

    if problem := plate_problem(normalise_plate(plate)):
        typer.echo(f"error: {plate!r}: {problem}", err=True)
        raise typer.Exit(2)
    if not yes and not typer.confirm(f"Erase every sighting and alert of {plate} and its look-alikes?"):
        raise typer.Exit(1)
    database = _database(database_url, data_dir)
    with database.begin() as connection:
        deleted = erase(connection, plate)
    typer.echo(
        f"erased {deleted.sightings} sightings, {deleted.pictures} pictures and {deleted.alerts} alerts"
    )


sessions_app = typer.Typer(
    help="The console's sessions. Example: stream-worker store sessions revoke --user alice",
    add_completion=False,
)
store_app.add_typer(sessions_app, name="sessions")


@sessions_app.command("revoke")
def revoke_sessions(
    user: str | None = typer.Option(None, "--user", help="Sign this user out everywhere."),
    everyone: bool = typer.Option(False, "--all", help="Sign everyone out everywhere."),
    database_url: str | None = DATABASE_URL,
    data_dir: str | None = DATA_DIR,
) -> None:
    """End console sessions on every replica at once (after a password leak, a user's departure);
    audited. API tokens are not sessions: remove their hashes from the users file.

    Example: stream-worker store sessions revoke --user alice. Exit codes: 0 done, 2 not exactly
    one of --user and --all, 3 database unreachable.
    """
    from stream_worker.store import queries, sessions

    if (user is None) == (not everyone):
        typer.echo("error: give --user NAME or --all", err=True)
        raise typer.Exit(2)
    database = _database(database_url, data_dir)
    with database.begin() as connection:
        revoked = sessions.revoke(connection, user)
        queries.add_audit(
            connection,
            "(command line)",
            "sessions.revoke",
            {"user": user, "all": everyone, "revoked": revoked},
        )
    typer.echo(f"ended {revoked} sessions of {user or 'everyone'}")


corrections_app = typer.Typer(
    help="The operators' reviews of reads. Example: stream-worker store corrections export --out ru-reviewed",
    add_completion=False,
)
store_app.add_typer(corrections_app, name="corrections")


@corrections_app.command(
    "export",
    epilog=(
        "Examples:\n\n"
        "  stream-worker store corrections export --out ru-reviewed --since 30d\n\n"
        "  stream-worker store corrections export --out us-gate --camera gate --country us\n\n"
        "  stream-worker eval ru-reviewed\n\n"
        "Writes <sighting id>.jpg (the stored plate crop: the worker must send plate pictures, "
        "--plate-images) and labels.csv (file, plate, country): the crops layout of `stream-worker "
        "eval`, which reads the folder for the country its name starts with (else --region). "
        "Exit codes: 0 written, 1 nothing to export, 2 invalid option or --out not an empty folder, "
        "3 database unreachable."
    ),
)
def export_corrections(
    out: Path = typer.Option(..., "--out", help="The folder to write (created; must be empty)."),
    camera: str | None = typer.Option(None, "--camera", help="Only this camera's reviewed sightings."),
    country: str | None = typer.Option(
        None, "--country", help="Only plates of this country (the review's, else the read's)."
    ),
    since: str | None = typer.Option(None, "--since", help="Seen from this time (ISO 8601 or 2h, 7d...)."),
    until: str | None = typer.Option(None, "--until", help="Seen before this time (ISO 8601 or 2h, 7d...)."),
    database_url: str | None = DATABASE_URL,
    data_dir: str | None = DATA_DIR,
) -> None:
    """The operators' corrected and confirmed reads as plate crops with their texts, for `eval`."""
    from stream_worker.store.corrections_export import ExportError, ExportFilter, export
    from stream_worker.store.search_output import parse_time

    try:
        only = ExportFilter(
            camera=camera,
            country=country.strip().lower() if country else None,
            since=parse_time(since) if since else None,
            until=parse_time(until) if until else None,
        )
    except ValueError as error:
        typer.echo(f"error: --since/--until: {error}", err=True)
        raise typer.Exit(2) from None
    database = _database(database_url, data_dir)
    try:
        with database.connect() as connection:
            exported = export(connection, out, only)
    except (ExportError, OSError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"wrote {exported.crops} labelled crops to {out}"
        + (
            f"; {exported.without_picture} reviewed sightings have no stored crop"
            if exported.without_picture
            else ""
        )
    )
    if not exported.crops:
        raise typer.Exit(1)


@store_app.command("hash-password")
def hash_password(
    name: str = typer.Option("admin", "--name", help="The user the printed entry is for."),
    role: str = typer.Option("admin", "--role", help="viewer (reads) or admin (also changes)."),
    token: bool = typer.Option(False, "--token", help="Also make an API bearer token (printed once)."),
    stdin: bool = typer.Option(False, "--stdin", help="Read the password from stdin's first line."),
) -> None:
    """Print a console user's entry for the users file (--users-file; a Kubernetes Secret): the
    password's scrypt hash and, with --token, a new API token's hash (the token itself is printed
    once, on stderr). The password is asked twice, hidden, unless --stdin.

    Example: stream-worker store hash-password --name alice --role viewer --token >> users.yaml
    """
    import sys

    from stream_worker.store.web.users import ROLES, hash_token, new_token
    from stream_worker.store.web.users import hash_password as scrypt_hash

    if role not in ROLES:
        typer.echo(f"error: --role must be one of {', '.join(ROLES)}", err=True)
        raise typer.Exit(2)
    if stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    if len(password) < 8:
        typer.echo("error: the password needs at least 8 characters", err=True)
        raise typer.Exit(2)
    typer.echo(f"  - name: {name}\n    role: {role}\n    password_hash: '{scrypt_hash(password)}'")
    if token:
        secret = new_token()
        typer.echo(f"    token_hashes: ['{hash_token(secret)}']")
        typer.echo(
            f"API token for {name} (shown once; send it as Authorization: Bearer TOKEN): {secret}", err=True
        )


# `stream-worker search` (engineer B) goes below.
@commands.command(
    epilog=(
        "Examples:\n\n"
        "  stream-worker search B840CK197\n\n"
        "  stream-worker search 'в 840 ск 197' --exact --camera gate --since 7d\n\n"
        "  stream-worker search B840CK197 --since 2026-03-01 --until 2026-03-02T12:00 --json\n\n"
        "  stream-worker search B840CK197 --database-url 'postgresql://store:${PGPASSWORD}@db/history'\n\n"
        "  stream-worker search --visits B840CK197 --site depot --since 7d\n\n"
        "  stream-worker search --visits --state on-site --json\n\n"
        "Times: ISO 8601 (UTC unless an offset is given) or a span back from now (90s, 15m, 2h, 7d, 2w); "
        "--since is inclusive, --until exclusive, both on when the vehicle was last seen (--visits: "
        "when it entered). Exit codes: 0 rows printed, 1 none found, 2 invalid option, 3 database "
        "unreachable or without the store's tables."
    )
)
def search(
    text: str | None = typer.Argument(
        None, help="The plate, spelled any way (B840CK197, 'в 840 ск 197'); none: every sighting."
    ),
    fuzzy: bool = typer.Option(
        True,
        "--fuzzy/--exact",
        help="Also texts within --max-distance (misreads O/0/C, B/8, 5/4, E/Y cost 0.5, other edits 1).",
    ),
    max_distance: float = typer.Option(1.0, "--max-distance", help="Fuzzy tolerance, inclusive (0 to 1.5)."),
    camera: str | None = typer.Option(None, "--camera", help="Only this camera's sightings."),
    zone: str | None = typer.Option(None, "--zone", help="Only sightings whose best read is in this zone."),
    direction: str | None = typer.Option(
        None, "--direction", help="approaching, receding, left, right or stationary."
    ),
    since: str | None = typer.Option(None, "--since", help="From this time (ISO 8601 or 2h, 7d...)."),
    until: str | None = typer.Option(None, "--until", help="Before this time (ISO 8601 or 2h, 7d...)."),
    limit: int = typer.Option(50, "--limit", help="Sightings per page (1 to 200)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The next page (the cursor a page prints)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line instead of a table."),
    visits: bool = typer.Option(
        False,
        "--visits",
        help="Find visits (entry, exit, dwell) instead of sightings; TEXT: their entry or exit plate.",
    ),
    site: str | None = typer.Option(None, "--site", help="--visits: only this site's visits."),
    state: str | None = typer.Option(None, "--state", help="--visits: on-site (open) or closed."),
    database_url: str | None = DATABASE_URL,
    data_dir: str | None = DATA_DIR,
) -> None:
    """Where and when was this plate seen (without TEXT: what was seen), stored sightings newest
    first; --visits: its visits (who is on site, how long they stayed), newest entry first."""
    from stream_worker.store.search_output import INVALID, UNREACHABLE, parse_time, run
    from stream_worker.store.settings import load_settings

    fields: dict[str, object] = {"text": text, "fuzzy": fuzzy, "max_distance": max_distance, "limit": limit}
    fields.update(camera=camera, cursor=cursor)
    own = {"site": site, "state": state} if visits else {"zone": zone, "direction": direction}
    foreign = {"zone": zone, "direction": direction} if visits else {"site": site, "state": state}
    for name, value in foreign.items():
        if value is not None:
            needs = "sightings (without --visits)" if visits else "--visits"
            typer.echo(f"error: --{name} applies to {needs}", err=True)
            raise typer.Exit(INVALID)
    fields.update(own)
    try:
        for name, value in (("since", since), ("until", until)):
            fields[name] = parse_time(value) if value is not None else None
    except ValueError as error:
        typer.echo(f"error: --{name}: {error}", err=True)
        raise typer.Exit(INVALID) from None
    overrides = _store_overrides(database_url, data_dir)
    try:
        url = load_settings(None, **overrides).resolved_database_url()
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(UNREACHABLE) from None
    raise typer.Exit(run(url, fields, as_json, typer.echo, lambda line: typer.echo(line, err=True), visits))


@commands.command(
    "report",
    epilog=(
        "Examples:\n\n"
        "  stream-worker report daily --since 30d > daily.csv\n\n"
        "  stream-worker report hourly --since 2026-03-01 --until 2026-03-02 --camera gate --format jsonl\n\n"
        "  stream-worker report top-plates --since 7d --format png --output top.png\n\n"
        "  stream-worker report health --since 24h --camera gate\n\n"
        "Reports: hourly and daily (sightings per camera), plates (sightings and unique plates per "
        "day), top-plates (the most frequent plates), alerts (per watch list), health (per camera "
        "per hour: frames published and shed, minutes streaming, the states seen; at most 31 days), "
        "dwell (visits ended by an exit, per dwell time: 5 min to 24 h buckets). Times as search's: "
        "ISO 8601 (UTC unless an offset is given) or a span back from now; --since inclusive, "
        "--until exclusive, at most 366 days; hours and days are UTC. Exit codes: 0 written, "
        "2 invalid option, 3 database unreachable or without the store's tables."
    ),
)
def report(
    name: str = typer.Argument(..., help="hourly, daily, plates, top-plates, alerts, health or dwell."),
    since: str = typer.Option("7d", "--since", help="From this time (ISO 8601 or 2h, 7d...)."),
    until: str | None = typer.Option(None, "--until", help="Before this time (default: now)."),
    camera: str | None = typer.Option(
        None, "--camera", help="Only this camera's sightings, alerts and visits (entry or exit)."
    ),
    file_format: str = typer.Option("csv", "--format", help="csv, jsonl or png (png needs --output)."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    database_url: str | None = DATABASE_URL,
    data_dir: str | None = DATA_DIR,
) -> None:
    """Counts over a time range, as CSV (formula-safe cells), JSON Lines or a PNG chart."""
    from datetime import UTC, datetime

    from stream_worker.store.report_output import run as write_report
    from stream_worker.store.reports import ReportRange
    from stream_worker.store.search_output import INVALID, UNREACHABLE, parse_time
    from stream_worker.store.settings import load_settings

    now = datetime.now(UTC)
    try:
        span = ReportRange(parse_time(since, now), parse_time(until, now) if until else now, camera)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(INVALID) from None
    overrides = {
        key: value for key, value in (("database_url", database_url), ("data_dir", data_dir)) if value
    }
    try:
        url = load_settings(None, **overrides).resolved_database_url()
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(UNREACHABLE) from None

    def echo_err(line: str) -> None:
        typer.echo(line, err=True)

    raise typer.Exit(write_report(url, name, span, file_format, output, echo_err))
