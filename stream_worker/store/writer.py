"""Write what the topics delivered into the history store, idempotently.

One call writes one consumed batch in the caller's transaction: the offsets are committed only
after it (app.py), so a crash between the two reads the batch again, and the unique ids make the
second write insert nothing (INSERT ... ON CONFLICT DO NOTHING, on SQLite and PostgreSQL alike).
A sighting's picture (its best read's base64 JPEG) goes to `pictures`, its record without it to
`sightings.record`; each new plate key brings its fuzzy-search variants (plate_keys.py). Times
are stored in UTC: SQLite keeps a time's digits without its offset, and search and the reports
compare and cut those digits. A visit's
events are upserted into its one row (`write_visits`): each kind sets only its own columns, so a
replay, or an `opened` read after its `closed`, leaves the row as it was. The cameras' status
records go to `camera_health` (camera_health.py). The sightings its INSERT stored as new are
counted for the reports in the same transaction (report_counts.py): a replay counts nothing.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, String, Table, any_, bindparam, select, text
from sqlalchemy.dialects import postgresql, sqlite

from stream_worker.contracts import PlateAlert, PlateSighting, PlateVisit
from stream_worker.contracts.visits import VisitEventKind
from stream_worker.store import report_counts
from stream_worker.store.camera_health import Sample, write_samples
from stream_worker.store.plate_keys import MAX_KEY_LENGTH, fold, variants
from stream_worker.store.rows import utc
from stream_worker.store.schema import alerts, pictures, plate_variants, sightings, visits


@dataclass(frozen=True, slots=True)
class Written:
    """Rows a batch inserted (replayed ones are not counted)."""

    sightings: int = 0
    alerts: int = 0
    pictures: int = 0
    health: int = 0
    visits: int = 0  # visit events applied (an event replayed counts again)


def insert_ignoring_duplicates(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> int:
    """Insert `rows`, skipping any whose unique key is already stored; how many were new."""
    if not rows:
        return 0
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    statement = dialect.insert(table).on_conflict_do_nothing()
    return max(connection.execute(statement, rows).rowcount, 0)


def _insert_sightings(connection: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert the sightings not stored yet and count them for the reports (report_counts.py);
    how many were new. SQLite returns the rows it inserted (RETURNING). On PostgreSQL the batch
    goes row by row through psycopg's pipeline and the rows this transaction inserted (`xmin`,
    the inserting transaction's id: a row stored before, or by another replica, has another) are
    read back: RETURNING would make one statement of thousands of parameters, which psycopg
    parses again for every batch (twice the writer's CPU)."""
    if not rows:
        return 0
    if connection.dialect.name == "sqlite":
        statement = sqlite.insert(sightings).on_conflict_do_nothing().returning(*report_counts.COUNTED)
        inserted = connection.execute(statement, rows).all()
    else:
        connection.execute(postgresql.insert(sightings).on_conflict_do_nothing(), rows)
        ids = bindparam("ids", [row["sighting_id"] for row in rows], type_=postgresql.ARRAY(String))
        inserted = connection.execute(
            select(*report_counts.COUNTED).where(
                sightings.c.sighting_id == any_(ids), text("sightings.xmin = pg_current_xact_id()::xid")
            )
        ).all()
    report_counts.add(connection, inserted)
    return len(inserted)


def _picture(sighting: PlateSighting) -> bytes | None:
    image = sighting.best_read.image
    if not image:
        return None
    try:
        return base64.b64decode(image, validate=True)
    except (binascii.Error, ValueError):
        return None  # the contract checks the alphabet; a bad padding is not worth the batch


def unwritable(message: PlateSighting | PlateVisit) -> str | None:
    """Why a sighting or visit the contract accepts still cannot be stored, or None: its text folds
    to a key longer than the index holds (an uppercase that grows: 'ß' -> 'SS')."""
    name, text = ("plate", message.plate) if isinstance(message, PlateVisit) else ("text", message.text)
    length = len(fold(text))
    if length > MAX_KEY_LENGTH:
        return f"{name}: folds to {length} characters, more than the {MAX_KEY_LENGTH} the store keeps"
    return None


def sighting_row(sighting: PlateSighting, picture: bytes | None, now: datetime) -> dict[str, Any]:
    record = sighting.model_dump(mode="json")
    record["best_read"].pop("image", None)
    return {
        "sighting_id": sighting.sighting_id,
        "camera_id": sighting.camera_id,
        "text": sighting.text,
        "text_key": fold(sighting.text),
        "format_valid": sighting.format_valid,
        "confidence": sighting.confidence,
        "reads": sighting.reads,
        "direction": sighting.direction.value if sighting.direction else None,
        "zone": sighting.best_read.zone,
        "first_seen": utc(sighting.first_seen),
        "last_seen": utc(sighting.last_seen),
        "closed_at": utc(sighting.closed_at),
        "candidates": record["candidates"],
        "record": record,
        "has_picture": picture is not None,
        "stored_at": now,
    }


def alert_row(alert: PlateAlert, now: datetime) -> dict[str, Any]:
    return {
        "alert_id": alert.alert_id,
        "sighting_id": alert.sighting_id,
        "camera_id": alert.camera_id,
        "list": alert.list,
        "label": alert.label,
        "plate": alert.plate,
        "candidate": alert.candidate,
        "match_kind": alert.match_kind.value,
        "distance": alert.distance,
        "confidence": alert.confidence,
        "origin": alert.origin.value,
        "captured_at": utc(alert.captured_at),
        "alerted_at": utc(alert.alerted_at),
        "record": alert.model_dump(mode="json"),
        "stored_at": now,
    }


# The columns each visit event kind sets on the visit's row once it exists.
_VISIT_UPDATES = {
    VisitEventKind.OPENED: (),
    VisitEventKind.OVERSTAY: ("overstay_s", "overstayed_at"),
    VisitEventKind.CLOSED: (
        "closed_at",
        "ended_by",
        "dwell_s",
        "exit_camera_id",
        "exit_sighting_id",
        "exit_text",
        "exited_at",
    ),
}


def visit_row(event: PlateVisit, now: datetime) -> dict[str, Any]:
    """The visit's row as far as `event` tells it (the entry's columns are in every event)."""
    kind = event.event
    closed = kind is VisitEventKind.CLOSED
    return {
        "visit_id": event.visit_id,
        "site": event.site,
        "plate": event.plate,
        "text_key": fold(event.plate),
        "entry_camera_id": event.entry_camera_id,
        "entry_sighting_id": event.entry_sighting_id,
        "entered_at": utc(event.entered_at),
        "overstay_s": event.overstay_s,
        "overstayed_at": utc(event.at) if kind is VisitEventKind.OVERSTAY else None,
        "closed_at": utc(event.at) if closed else None,
        "ended_by": event.ended_by.value if closed and event.ended_by else None,
        "dwell_s": event.dwell_s if closed else None,
        "exit_camera_id": event.exit_camera_id if closed else None,
        "exit_sighting_id": event.exit_sighting_id if closed else None,
        "exit_text": event.exit_text if closed else None,
        "exited_at": utc(event.exited_at) if closed else None,
        "stored_at": now,
    }


def write_visits(connection: Connection, events: Sequence[PlateVisit], now: datetime) -> int:
    """Upsert each event into its visit's row; how many events were applied. One statement per
    kind, each visit once in it (PostgreSQL updates a row once per statement)."""
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    applied, keys = 0, set()
    for kind, columns in _VISIT_UPDATES.items():
        rows = [visit_row(e, now) for e in {e.visit_id: e for e in events if e.event is kind}.values()]
        if not rows:
            continue
        keys.update(row["text_key"] for row in rows)
        statement = dialect.insert(visits)
        if columns:
            statement = statement.on_conflict_do_update(
                index_elements=[visits.c.visit_id], set_={name: statement.excluded[name] for name in columns}
            )
        else:
            statement = statement.on_conflict_do_nothing()
        connection.execute(statement, rows)
        applied += len(rows)
    variant_rows = [{"variant": v, "text_key": key} for key in sorted(keys) for v in sorted(variants(key))]
    insert_ignoring_duplicates(connection, plate_variants, variant_rows)
    return applied


def write_batch(
    connection: Connection,
    batch_sightings: Sequence[PlateSighting],
    batch_alerts: Sequence[PlateAlert],
    now: datetime | None = None,
    health: Sequence[Sample] = (),
    batch_visits: Sequence[PlateVisit] = (),
) -> Written:
    """Write one batch in the caller's transaction (`Database.begin()`); `health`: the cameras'
    status records, in the topic's order (camera_health.py)."""
    now = now or datetime.now(UTC)
    unique_sightings = {s.sighting_id: s for s in batch_sightings}  # a batch may repeat a record
    sighting_rows, picture_rows, keys = [], [], set()
    for sighting in unique_sightings.values():
        picture = _picture(sighting)
        row = sighting_row(sighting, picture, now)
        sighting_rows.append(row)
        keys.add(row["text_key"])
        if picture is not None:
            picture_rows.append({"sighting_id": sighting.sighting_id, "jpeg": picture})
    variant_rows = [{"variant": v, "text_key": key} for key in sorted(keys) for v in sorted(variants(key))]
    written_sightings = _insert_sightings(connection, sighting_rows)
    written_pictures = insert_ignoring_duplicates(connection, pictures, picture_rows)
    insert_ignoring_duplicates(connection, plate_variants, variant_rows)
    alert_rows = [alert_row(alert, now) for alert in {a.alert_id: a for a in batch_alerts}.values()]
    written_alerts = insert_ignoring_duplicates(connection, alerts, alert_rows)
    written_health = write_samples(connection, list(health))
    written_visits = write_visits(connection, batch_visits, now) if batch_visits else 0
    return Written(written_sightings, written_alerts, written_pictures, written_health, written_visits)
