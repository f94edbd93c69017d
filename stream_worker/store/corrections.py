"""The operators' corrections of reads, kept beside the sightings (table `corrections`): one row
per sighting, the latest review, written by the console after the record is on the corrections
topic. The corrected text is indexed like a sighting's (`text_key` and its `plate_variants`), so
that search finds a sighting by its corrected text as well as by the text read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, delete, insert, select

from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.store.plate_keys import fold, variants
from stream_worker.store.queries import add_audit
from stream_worker.store.rows import utc
from stream_worker.store.schema import corrections, plate_variants
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
