"""What the `stream-worker watchlist` commands do, apart from parsing their options (alerts/cli.py).

Each returns the exit status (service/topic_actions.py: 0 done, 1 the broker failed, 2 bad input,
nothing written).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from stream_worker.contracts.watchlist import WatchEntry, WatchKind, new_entry, validate_plate
from stream_worker.service.options import Connection
from stream_worker.service.topic_actions import (
    BAD_INPUT,
    BROKER_FAILED,
    OK,
    Echo,
    read_settings_topic,
    remove_from_settings_topic,
    write_settings_topic,
)
from stream_worker.watchlists.csvfile import CsvImportError, parse_csv, write_csv
from stream_worker.watchlists.topic import WATCHLIST, WatchlistSnapshot, records

WHEN_MISSING = "the watch list is empty"


def add(
    connection: Connection,
    plate: str,
    list_name: str,
    label: str | None,
    max_distance: float | None,
    expires_at: str | None,
    out: Echo,
    err: Echo,
    allow: bool = False,
    overstay_s: float | None = None,
) -> int:
    """Put one plate on a list (replacing its entry if it has one); `allow`: an allow list's."""
    kind = WatchKind.ALLOW if allow else WatchKind.WATCH
    try:
        entry = new_entry(plate, list_name, label, max_distance, expires_at, kind=kind, overstay_s=overstay_s)
    except ValueError as error:
        err(f"error: {error}")
        return BAD_INPUT
    status = _write(connection, [entry], err)
    if status == OK:
        out(f"added {entry.plate} to {entry.list}{' (allow list)' if allow else ''}")
    return status


def remove(connection: Connection, plate: str, out: Echo, err: Echo) -> int:
    """Write the plate's tombstone, unless the watch list does not have it."""
    try:
        plate = validate_plate(plate)
    except ValueError as error:
        err(f"error: plate {error}")
        return BAD_INPUT
    return remove_from_settings_topic(
        connection,
        WATCHLIST,
        plate,
        records([], [plate]),
        when_missing=WHEN_MISSING,
        absent=f"{plate} is not on the watch list",
        removed=lambda entry: f"removed {plate} from {entry.list}",
        out=out,
        err=err,
    )


def show(connection: Connection, as_json: bool, out: Echo, err: Echo) -> int:
    """Print the entries, by list then plate: a table, or one JSON object per line."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    entries = sorted(snapshot.values.values(), key=lambda entry: (entry.list, entry.plate))
    if as_json:
        for entry in entries:
            out(entry.to_json().decode())
    elif entries:
        now = datetime.now(UTC)
        out(_row("PLATE", "LIST", "MAX_DISTANCE", "EXPIRES_AT", "LABEL"))
        for entry in entries:
            out(_table_row(entry, now))
    else:
        err(f"the watch list ({connection.topic}) is empty")
    return OK


def import_csv(connection: Connection, path: Path, out: Echo, err: Echo) -> int:
    """Check every row of the file, then write them all, or nothing when any row is bad."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        err(f"error: cannot read {path}: {error}")
        return BAD_INPUT
    try:
        entries = parse_csv(text)
    except CsvImportError as error:
        err(f"error: {path} refused, nothing imported ({len(error.problems)} bad row(s)):")
        for problem in error.problems:
            err(f"  {problem}")
        return BAD_INPUT
    if not entries:
        out(f"{path} has no rows; nothing imported")
        return OK
    status = _write(connection, entries, err)
    if status == OK:
        lists = sorted({entry.list for entry in entries})
        out(f"imported {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} into {', '.join(lists)}")
    return status


def export_csv(connection: Connection, out: Echo, err: Echo) -> int:
    """The whole watch list as CSV, in the columns `import` reads."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    buffer = io.StringIO()
    write_csv(snapshot.values.values(), buffer)
    out(buffer.getvalue().rstrip("\n"))
    return OK


def _read(connection: Connection, err: Echo) -> WatchlistSnapshot | None:
    return read_settings_topic(connection, WATCHLIST, WHEN_MISSING, err)


def _write(connection: Connection, entries: list[WatchEntry], err: Echo) -> int:
    return write_settings_topic(connection, WATCHLIST, records(entries, []), err)


def _row(plate: str, list_name: str, distance: str, expires: str, label: str) -> str:
    return f"{plate:<10} {list_name:<16} {distance:<12} {expires:<26} {label}".rstrip()


def _table_row(entry: WatchEntry, now: datetime) -> str:
    distance = "default" if entry.max_distance is None else f"{entry.max_distance:g}"
    expires = "-" if entry.expires_at is None else entry.expires_at.isoformat().replace("+00:00", "Z")
    if entry.is_expired(now):
        expires += " (expired)"
    return _row(entry.plate, entry.list, distance, expires, entry.label or "")
