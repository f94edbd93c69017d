"""The operators' reviews as a labelled set of plate crops, in the crops layout `stream-worker eval`
reads (evaluation/crops.py): `<sighting id>.jpg` per reviewed sighting and a `labels.csv` with the
columns `file`, `plate` (the reviewed text: the corrected one, or the read one confirmed) and
`country` (the review's, else the sighting's; empty when neither has one). So `eval` scores the
recognizer on the plates operators read, closing the loop from review to quality figures.

The crop is the picture the store keeps of the sighting: its best read's plate crop, stored only
when the worker sends plate pictures (`--plate-images`). A reviewed sighting without one has no
crop to score and is left out, counted. Confirmations are exported too: a read an operator
confirmed is a labelled plate as much as a corrected one.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Connection, select

from stream_worker.store.schema import corrections, pictures, sightings

LABELS = "labels.csv"
COLUMNS = ("file", "plate", "country")


@dataclass(frozen=True, slots=True)
class ExportFilter:
    camera: str | None = None
    country: str | None = None  # lower case
    since: datetime | None = None  # on when the vehicle was last seen, inclusive
    until: datetime | None = None  # exclusive


@dataclass(frozen=True, slots=True)
class Exported:
    crops: int  # written, each a row of labels.csv
    without_picture: int  # reviewed sightings left out: no crop stored


class ExportError(ValueError):
    """The output folder cannot take the set; the message says why."""


def _folder(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} is not an empty folder: the set would mix with what is there")
    out.mkdir(parents=True, exist_ok=True)


def export(connection: Connection, out: Path, only: ExportFilter) -> Exported:
    """Write the reviewed sightings `only` selects to `out` (created; must be empty or absent)."""
    _folder(out)
    statement = (
        select(
            corrections.c.sighting_id,
            corrections.c.text,
            corrections.c.country,
            sightings.c.record,
            pictures.c.jpeg,
        )
        .join(sightings, sightings.c.sighting_id == corrections.c.sighting_id)
        .outerjoin(pictures, pictures.c.sighting_id == corrections.c.sighting_id)
        .order_by(sightings.c.last_seen, corrections.c.sighting_id)
    )
    if only.camera is not None:
        statement = statement.where(sightings.c.camera_id == only.camera)
    if only.since is not None:
        statement = statement.where(sightings.c.last_seen >= only.since)
    if only.until is not None:
        statement = statement.where(sightings.c.last_seen < only.until)
    rows: list[tuple[str, str, str]] = []
    without_picture = 0
    for row in connection.execute(statement):
        country = row.country or (row.record or {}).get("country") or ""
        if only.country is not None and country != only.country:
            continue
        if row.jpeg is None:
            without_picture += 1
            continue
        name = f"{row.sighting_id}.jpg"
        (out / name).write_bytes(row.jpeg)
        rows.append((name, row.text, country))
    with (out / LABELS).open("w", encoding="utf-8", newline="") as labels:
        writer = csv.writer(labels)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return Exported(len(rows), without_picture)
