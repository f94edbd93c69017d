"""The operators' corrections of reads, kept beside the sightings (table `corrections`): one row
per sighting, the latest review, written by the console after the record is on the corrections
topic. The corrected text is indexed like a sighting's (`text_key` and its `plate_variants`), so
that search finds a sighting by its corrected text as well as by the text read.

The alerts of a corrected sighting are marked corrected where its entry no longer matches the
corrected text (`mark_alerts`): they were raised by a misread. The alerts service raises the
corrected text's own alert (alerts/corrections.py); marking is the store's, where operators see it.
A sighting's alerts: those that name it (origin sighting or correction), and the read alerts of its
camera captured within its first..last seen whose read is one of its reads (plates topic position;
a read alert names no sighting).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, and_, delete, insert, or_, select, update

from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.plates.matching import match
from stream_worker.store.plate_keys import fold, variants
from stream_worker.store.queries import add_audit
from stream_worker.store.rows import utc
from stream_worker.store.schema import alerts, corrections, plate_variants, sightings
from stream_worker.store.writer import insert_ignoring_duplicates


class CorrectionRow(BaseModel):
    """A sighting's stored correction, as the console shows it."""

    sighting_id: str
    camera_id: str
    kind: CorrectionKind
    old_text: str
    text: str
    region: str | None = None
    country: str | None = None
    corrected_by: str
    corrected_at: datetime


def save(connection: Connection, correction: Correction) -> None:
    """Store `correction` as the sighting's (replacing an earlier one), index its text and audit
    it; part of the caller's transaction (`Database.begin()`)."""
    key = fold(correction.new_text)
    row: dict[str, Any] = {
        "sighting_id": correction.sighting_id,
        "camera_id": correction.camera_id,
        "kind": correction.kind.value,
        "old_text": correction.old_text,
        "text": correction.new_text,
        "text_key": key,
        "region": correction.region,
        "country": correction.country,
        "corrected_by": correction.corrected_by,
        "corrected_at": correction.corrected_at,
    }
    connection.execute(delete(corrections).where(corrections.c.sighting_id == correction.sighting_id))
    connection.execute(insert(corrections).values(row))
    insert_ignoring_duplicates(
        connection, plate_variants, [{"variant": v, "text_key": key} for v in sorted(variants(key))]
    )
    detail = {
        "sighting_id": correction.sighting_id,
        "camera_id": correction.camera_id,
        "old_text": correction.old_text,
        "new_text": correction.new_text,
        "region": correction.region,
        "country": correction.country,
    }
    add_audit(
        connection,
        correction.corrected_by,
        f"sighting.{correction.kind.value}",
        detail,
        correction.corrected_at,
    )


# The alerts service's --default-max-distance: an entry without its own max_distance tolerates this.
DEFAULT_MAX_DISTANCE = 1.0


def mark_alerts(
    connection: Connection,
    correction: Correction,
    watchlist: Mapping[str, WatchEntry],
    default_max_distance: float = DEFAULT_MAX_DISTANCE,
) -> int:
    """Mark the sighting's alerts whose entry the corrected text no longer matches (unmark those it
    matches again: a later review); how many are marked now. An entry gone from the watch list is
    judged as it was alerted, with the default tolerance. Part of the caller's transaction."""
    seen = connection.execute(
        select(sightings.c.first_seen, sightings.c.last_seen, sightings.c.record).where(
            sightings.c.sighting_id == correction.sighting_id
        )
    ).first()
    named = alerts.c.sighting_id == correction.sighting_id
    if seen is not None:
        read_alerts = and_(
            alerts.c.sighting_id.is_(None),
            alerts.c.camera_id == correction.camera_id,
            alerts.c.captured_at >= seen.first_seen,
            alerts.c.captured_at <= seen.last_seen,
        )
        named = or_(named, read_alerts)
    columns = (alerts.c.alert_id, alerts.c.sighting_id, alerts.c.list, alerts.c.plate, alerts.c.record)
    reads = (seen.record or {}).get("source") if seen is not None else None
    marked = 0
    for row in connection.execute(select(*columns).where(named)).all():
        if row.sighting_id is None and not _among_reads((row.record or {}).get("source"), reads):
            continue  # another vehicle's read alert, of the same camera at the same time
        entry = watchlist.get(row.plate) or WatchEntry(
            plate=row.plate, list=row.list, added_at=correction.corrected_at
        )
        still = bool(match(correction.new_text, [entry], default_max_distance))
        values = (
            {"corrected_text": None, "corrected_at": None}
            if still
            else {"corrected_text": correction.new_text, "corrected_at": correction.corrected_at}
        )
        connection.execute(update(alerts).where(alerts.c.alert_id == row.alert_id).values(values))
        marked += not still
    return marked


def _among_reads(source: Any, reads: Any) -> bool:
    """Whether a read alert's plates position is one of the sighting's reads (either unknown: yes)."""
    if not isinstance(source, dict) or not isinstance(reads, dict):
        return True
    return (
        source.get("topic") == reads.get("topic")
        and source.get("partition") == reads.get("partition")
        and reads.get("first_offset", 0) <= source.get("offset", -1) <= reads.get("last_offset", -1)
    )


def of_sighting(connection: Connection, sighting_id: str) -> CorrectionRow | None:
    """The sighting's correction; None when nobody reviewed its read."""
    row = (
        connection.execute(select(corrections).where(corrections.c.sighting_id == sighting_id))
        .mappings()
        .first()
    )
    if row is None:
        return None
    values = {name: value for name, value in row.items() if name != "text_key"}
    return CorrectionRow(**{**values, "corrected_at": utc(row["corrected_at"])})
