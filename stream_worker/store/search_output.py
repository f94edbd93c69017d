"""`stream-worker search`'s work: read the times given on the command line, run one search of
sightings (or, `--visits`, of visits) against the database URL and print its page (a table, or one
JSON object per line).

Exit codes: 0 rows printed, 1 none found, 2 invalid query, 3 database unreachable or not migrated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

from stream_worker.store.rows import Page, SightingRow, VisitRow, duration

if TYPE_CHECKING:
    from stream_worker.store.database import Database

_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

FOUND, NOTHING_FOUND, INVALID, UNREACHABLE = 0, 1, 2, 3


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (naive: UTC) or a span back from now: `90s`, `15m`, `2h`, `7d`, `2w`."""
    spelled = text.strip()
    match = _AGO.match(spelled.lower())
    if match:
        amount, unit = match.groups()
        return (now or datetime.now(UTC)) - timedelta(seconds=float(amount) * _UNITS[unit])
    try:
        value = datetime.fromisoformat(spelled)
    except ValueError:
        raise ValueError(f"{text!r} is neither an ISO 8601 time nor a span like 15m, 2h, 7d") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


COLUMNS = (
    ("LAST SEEN (UTC)", "last_seen"),
    ("CAMERA", "camera_id"),
    ("PLATE", "text"),
    ("DIST", "distance"),
    ("DIRECTION", "direction"),
    ("ZONE", "zone"),
    ("READS", "reads"),
    ("CONF", "confidence"),
    ("PICTURE", "has_picture"),
    ("SIGHTING", "sighting_id"),
)


VISIT_COLUMNS = (
    ("ENTERED (UTC)", "entered_at"),
    ("SITE", "site"),
    ("PLATE", "plate"),
    ("DIST", "distance"),
    ("ENTRY", "entry_camera_id"),
    ("LEFT (UTC)", "closed_at"),
    ("EXIT", "exit_camera_id"),
    ("EXIT PLATE", "exit_text"),
    ("DWELL", "dwell_s"),
    ("ENDED BY", "ended_by"),
    ("OVERSTAY", "overstayed_at"),
    ("VISIT", "visit_id"),
)


def _shown(row: BaseModel, name: str) -> str:
    value = getattr(row, name)
    if name == "has_picture":
        return "yes" if value else "no"
    if name == "dwell_s":
        return duration(value)
    if name == "closed_at" and value is None:
        return "on site"
    return _cell(value)


def table(rows: list[SightingRow] | list[VisitRow]) -> str:
    """The rows (sightings or visits) as aligned columns under a header."""
    columns = VISIT_COLUMNS if rows and isinstance(rows[0], VisitRow) else COLUMNS
    header = [title for title, _ in columns]
    cells = [[_shown(row, name) for _, name in columns] for row in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(columns))]
    lines = (
        "  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True))
        for line in [header, *cells]
    )
    return "\n".join(line.rstrip() for line in lines)


def open_store(database_url: str, echo_err: Callable[[str], None]) -> Database | None:
    """The store at `database_url` to read, or None (the reason printed): a reader creates no
    database, so a SQLite file that is not there is an error, not a new empty store."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from stream_worker.store.database import Database, DatabaseError

    try:
        url = make_url(database_url)
    except ArgumentError:
        echo_err("error: the database URL is not one SQLAlchemy reads (sqlite:///... or postgresql://...)")
        return None
    path = url.database if url.get_backend_name() == "sqlite" else None
    if path and path != ":memory:" and not Path(path).is_file():
        echo_err(f"error: no history store at {path} (the store creates it: stream-worker store)")
        return None
    try:
        return Database(database_url)
    except DatabaseError as error:
        echo_err(f"error: {error}")
        return None


def run(
    database_url: str,
    fields: dict[str, object],
    as_json: bool,
    echo: Callable[[str], None],
    echo_err: Callable[[str], None],
    visits: bool = False,
) -> int:
    """Search with the SearchQuery (`visits`: VisitQuery) `fields`, print the page, say how to get
    the next one."""
    from pydantic import ValidationError
    from sqlalchemy.exc import SQLAlchemyError

    from stream_worker.store.search import SearchQuery, search
    from stream_worker.store.visits import VisitQuery, search_visits

    contract: type[SearchQuery | VisitQuery] = VisitQuery if visits else SearchQuery
    try:
        query = contract.model_validate(fields)
    except ValidationError as error:
        for problem in error.errors():
            where = ".".join(str(part) for part in problem["loc"]) or "query"
            echo_err(f"error: {where}: {problem['msg']}")
        return INVALID
    database = open_store(database_url, echo_err)
    if database is None:
        return UNREACHABLE
    try:
        with database.connect() as connection:
            if isinstance(query, VisitQuery):
                page: Page[Any] = search_visits(connection, query)
            else:
                page = search(connection, query)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines() or [type(error).__name__]
        echo_err(f"error: cannot search {database.safe_url}: {reason[0]}")
        return UNREACHABLE
    finally:
        database.dispose()
    if as_json:
        for row in page.items:
            echo(orjson.dumps(row.model_dump(mode="json")).decode())
    elif page.items:
        echo(table(page.items))
    if page.next_cursor is not None:
        echo_err(f"more: add --cursor {page.next_cursor}")
    if not page.items:
        if not as_json:
            echo_err("no visit found" if visits else "no sighting found")
        return NOTHING_FOUND
    return FOUND
