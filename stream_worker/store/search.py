"""Plate search over the stored sightings: exact or fuzzy text, camera, zone, direction and time,
newest first, one page at a time.

Exact: `text = normalise_plate(Q)` on the (text, last_seen) index. Fuzzy: the folded keys that
share a deletion variant with the query's (plate_keys.py: every text within the tolerance does)
come from `plate_variants`; the texts stored under those keys are found by probing the same index
with each key's spellings (`plate_keys.spellings`: stored texts are normalised, as the recognizer
writes them), and kept only when the alerts' own weighted distance
(`plates.matching.plate_distance`) from the query is within `max_distance`, so that a fuzzy
search finds what the watch list would have alerted on; then the sightings with those texts, like
an exact search of several texts.

A sighting an operator corrected (store/corrections.py) is found by its corrected text as well as
by the text read: the corrections' texts are indexed and probed the same way, and a sighting
matches when either of its texts is among those found.

Pages are a keyset over (last_seen, seq), both descending: a page's `next_cursor` is the last
row's position, and the next page starts strictly after it, so rows stored meanwhile (newer, or
with later seq) neither repeat nor shift the pages being read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import ColumnElement, Connection, or_, select

from stream_worker.contracts.sightings import Direction
from stream_worker.contracts.watchlist import normalise_plate
from stream_worker.plates.matching import CHEAP_COST, EDIT_COST, plate_distance
from stream_worker.store.keyset import newest_first
from stream_worker.store.plate_keys import EDITS, fold, spellings, variants
from stream_worker.store.rows import Page, SightingRow, decode_cursor, utc
from stream_worker.store.schema import corrections, plate_variants, sightings

MAX_LIMIT = 200
# The widest tolerance the stored variants serve: fewer than EDITS + 1 whole edits.
MAX_FUZZY_DISTANCE = (EDITS + 1) * EDIT_COST - CHEAP_COST
MAX_TEXT_LENGTH = 32  # the text columns' width
# Texts probed in the index per fuzzy search (a plate has some tens; beyond, the key's rows are read).
MAX_SPELLINGS = 1024


class PlateQueryChecks(BaseModel):
    """The checks a query of the history shares (sightings, visits): `text` as a plate, `since` and
    `until` made UTC, `cursor` a page's."""

    @field_validator("text", check_fields=False)
    @classmethod
    def _plate(cls, value: str | None) -> str | None:
        if value is None:
            return None
        plate = normalise_plate(value)
        if not plate:
            raise ValueError("the plate text is empty")
        if len(plate) > MAX_TEXT_LENGTH:
            raise ValueError(f"the plate text is longer than {MAX_TEXT_LENGTH} characters")
        return plate

    @field_validator("since", "until", check_fields=False)
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        try:
            return utc(value)
        except OverflowError:  # near year 1 or 9999, the offset takes it off the calendar
            raise ValueError("the date is out of range") from None

    @field_validator("cursor", check_fields=False)
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cursor(value)
        return value


class SearchQuery(PlateQueryChecks):
    """What to look for. Every filter is optional and they combine with AND; without `text`, all
    sightings match (newest first). `since` is inclusive and `until` exclusive, both on `last_seen`
    (when the vehicle was last read); naive times are UTC."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="The plate, spelled any way (`в 840 ск 197` = `B840CK197`).")
    fuzzy: bool = Field(True, description="Also texts within max_distance of `text` (O/0, B/8... cost 0.5).")
    max_distance: float = Field(
        1.0,
        ge=0,
        le=MAX_FUZZY_DISTANCE,
        description="Fuzzy tolerance, inclusive, in the alerts' weighted edit distance: 1.0 allows one "
        "whole edit or two cheap confusions.",
    )
    camera: str | None = None
    zone: str | None = None
    direction: Direction | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(None, description="A page's `next_cursor`, for the page after it.")


SearchPage = Page[SightingRow]

SUMMARY_COLUMNS = (
    sightings.c.seq,
    sightings.c.sighting_id,
    sightings.c.camera_id,
    sightings.c.text,
    sightings.c.format_valid,
    sightings.c.confidence,
    sightings.c.reads,
    sightings.c.direction,
    sightings.c.zone,
    sightings.c.first_seen,
    sightings.c.last_seen,
    sightings.c.has_picture,
)


TEXT_COLUMNS = ((sightings.c.text, sightings.c.text_key), (corrections.c.text, corrections.c.text_key))


def near_texts(
    connection: Connection,
    text: str,
    max_distance: float,
    columns: Sequence[tuple[ColumnElement[Any], ColumnElement[Any]]] = TEXT_COLUMNS,
) -> dict[str, float]:
    """The stored texts within `max_distance` of the normalised `text`, with their distances.

    The keys sharing a variant with the query's come from `plate_variants`; the stored texts of
    each key are found by probing each of `columns`' (text, key) indexes with the key's every
    spelling (the few texts that fold to it: no table rows read, however often a plate was seen),
    or for a key of too many spellings by reading its rows.
    """
    if max_distance > MAX_FUZZY_DISTANCE:
        raise ValueError(
            f"max_distance {max_distance} is beyond what the variants serve ({MAX_FUZZY_DISTANCE})"
        )
    variant = plate_variants.c.variant
    keys = connection.execute(
        select(plate_variants.c.text_key).where(variant.in_(sorted(variants(fold(text))))).distinct()
    ).scalars()
    candidates: list[str] = []
    unspelled: list[str] = []
    for key in sorted(keys):
        spelled = spellings(key, MAX_SPELLINGS - len(candidates))
        if spelled is None:
            unspelled.append(key)
        else:
            candidates += spelled
    stored: set[str] = set()
    for text_column, key_column in columns:
        if candidates:
            found = select(text_column).where(text_column.in_(candidates)).distinct()
            stored.update(connection.execute(found).scalars())
        if unspelled:
            found = select(text_column).where(key_column.in_(unspelled)).distinct()
            stored.update(connection.execute(found).scalars())
    near = {}
    for candidate in stored:
        distance = plate_distance(text, candidate, max_distance)
        if distance <= max_distance:
            near[candidate] = distance
    return near


def search(connection: Connection, query: SearchQuery) -> SearchPage:
    """One page of the sightings `query` finds, newest first (last_seen, then seq)."""
    conditions: list[Any] = []
    distances: dict[str, float] = {}
    if query.text is not None:
        if query.fuzzy and query.max_distance > 0:
            distances = near_texts(connection, query.text, query.max_distance)
        else:
            distances = {query.text: 0.0}
        if not distances:
            return SearchPage(items=[])
        texts = sorted(distances)
        corrected = select(corrections.c.sighting_id).where(corrections.c.text.in_(texts))
        conditions.append(or_(sightings.c.text.in_(texts), sightings.c.sighting_id.in_(corrected)))
    if query.camera is not None:
        conditions.append(sightings.c.camera_id == query.camera)
    if query.zone is not None:
        conditions.append(sightings.c.zone == query.zone)
    if query.direction is not None:
        conditions.append(sightings.c.direction == query.direction.value)
    if query.since is not None:
        conditions.append(sightings.c.last_seen >= query.since)
    if query.until is not None:
        conditions.append(sightings.c.last_seen < query.until)
    rows, next_cursor = newest_first(
        connection,
        SUMMARY_COLUMNS,
        sightings.c.last_seen,
        sightings.c.seq,
        conditions,
        query.cursor,
        query.limit,
    )
    corrected = _corrected_texts(connection, [row["sighting_id"] for row in rows])
    items = []
    for row in rows:
        texts = [row["text"], corrected.get(row["sighting_id"])]
        near = [distances[text] for text in texts if text in distances]
        item = summary(row, min(near) if near else None)
        item.corrected_text = corrected.get(row["sighting_id"])
        items.append(item)
    return SearchPage(items=items, next_cursor=next_cursor)


def _corrected_texts(connection: Connection, ids: list[str]) -> dict[str, str]:
    """The corrected text of each of these sightings that has one (confirmations too)."""
    if not ids:
        return {}
    found = select(corrections.c.sighting_id, corrections.c.text).where(corrections.c.sighting_id.in_(ids))
    return {row.sighting_id: row.text for row in connection.execute(found)}


def summary(row: Any, distance: float | None = None) -> SightingRow:
    """A SightingRow from a row of SUMMARY_COLUMNS (times made aware UTC)."""
    values = dict(row)
    values["first_seen"] = utc(values["first_seen"])
    values["last_seen"] = utc(values["last_seen"])
    values["has_picture"] = bool(values["has_picture"])
    return SightingRow(distance=distance, **values)
