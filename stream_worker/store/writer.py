"""Write what the topics delivered into the history store, idempotently.

One call writes one consumed batch in the caller's transaction: the offsets are committed only
after it (app.py), so a crash between the two reads the batch again, and the unique ids make the
second write insert nothing (INSERT ... ON CONFLICT DO NOTHING, on SQLite and PostgreSQL alike).
A sighting's picture (its best read's base64 JPEG) goes to `pictures`, its record without it to
`sightings.record`; each new plate key brings its fuzzy-search variants (plate_keys.py). Times
are stored in UTC: SQLite keeps a time's digits without its offset, and search and the reports
compare and cut those digits. The cameras' status records go to `camera_health` (camera_health.py).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite

from stream_worker.contracts import PlateAlert, PlateSighting
from stream_worker.store.camera_health import Sample, write_samples
from stream_worker.store.plate_keys import MAX_KEY_LENGTH, fold, variants
from stream_worker.store.rows import utc
from stream_worker.store.schema import alerts, pictures, plate_variants, sightings


@dataclass(frozen=True, slots=True)
class Written:
    """Rows a batch inserted (replayed ones are not counted)."""

    sightings: int = 0
    alerts: int = 0
    pictures: int = 0
    health: int = 0


def insert_ignoring_duplicates(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> int:
    """Insert `rows`, skipping any whose unique key is already stored; how many were new."""
    if not rows:
        return 0
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    statement = dialect.insert(table).on_conflict_do_nothing()
    return max(connection.execute(statement, rows).rowcount, 0)


def _picture(sighting: PlateSighting) -> bytes | None:
    image = sighting.best_read.image
    if not image:
        return None
    try:
        return base64.b64decode(image, validate=True)
    except (binascii.Error, ValueError):
        return None  # the contract checks the alphabet; a bad padding is not worth the batch


def unwritable(sighting: PlateSighting) -> str | None:
    """Why a sighting the contract accepts still cannot be stored, or None: its text folds to a key
    longer than the index holds (an uppercase that grows: 'ß' -> 'SS')."""
    length = len(fold(sighting.text))
    if length > MAX_KEY_LENGTH:
        return f"text: folds to {length} characters, more than the {MAX_KEY_LENGTH} the store keeps"
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


def write_batch(
    connection: Connection,
    batch_sightings: Sequence[PlateSighting],
    batch_alerts: Sequence[PlateAlert],
    now: datetime | None = None,
    health: Sequence[Sample] = (),
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
    written_sightings = insert_ignoring_duplicates(connection, sightings, sighting_rows)
    written_pictures = insert_ignoring_duplicates(connection, pictures, picture_rows)
    insert_ignoring_duplicates(connection, plate_variants, variant_rows)
    alert_rows = [alert_row(alert, now) for alert in {a.alert_id: a for a in batch_alerts}.values()]
    written_alerts = insert_ignoring_duplicates(connection, alerts, alert_rows)
    written_health = write_samples(connection, list(health))
    return Written(written_sightings, written_alerts, written_pictures, written_health)
