"""The stored visits' reads: who is on site now, and a search of visits by plate (exact or fuzzy,
as sightings are searched), site, camera, state and time, newest entry first, one page at a time.

A visit is found by its entry text (`plate`) or its exit text: the texts within the tolerance come
from the same variant index as the sightings' (search.near_texts, with the visits' own plates
probed too, so a visit whose sightings aged out is still found). Pages are a keyset over
(entered_at, seq), both descending, as search's are over (last_seen, seq).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field
from sqlalchemy import Connection, or_, select

from stream_worker.store.keyset import newest_first
from stream_worker.store.rows import Page, VisitRow, utc
from stream_worker.store.schema import visits
from stream_worker.store.search import (
    MAX_FUZZY_DISTANCE,
    MAX_LIMIT,
    TEXT_COLUMNS,
    PlateQueryChecks,
    near_texts,
)

MAX_ON_SITE = 1000  # open visits listed at most, oldest entries first
VISIT_TEXTS = (*TEXT_COLUMNS, (visits.c.plate, visits.c.text_key))

VISIT_COLUMNS = tuple(column for column in visits.columns if column.name not in ("text_key", "stored_at"))


class VisitState(StrEnum):
    ON_SITE = "on-site"  # not closed yet
    CLOSED = "closed"


class VisitQuery(PlateQueryChecks):
    """What to look for; the filters combine with AND, none: every visit (newest entry first).
    `since` is inclusive and `until` exclusive, both on `entered_at`; naive times are UTC."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="The plate (entry or exit text), spelled any way.")
    fuzzy: bool = Field(True, description="Also texts within max_distance of `text` (O/0, B/8... cost 0.5).")
    max_distance: float = Field(1.0, ge=0, le=MAX_FUZZY_DISTANCE, description="Fuzzy tolerance, inclusive.")
    site: str | None = None
    camera: str | None = Field(None, description="The entry or the exit camera.")
    state: VisitState | None = Field(None, description="on-site (open) or closed; none: both.")
    since: datetime | None = None
    until: datetime | None = None
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(None, description="A page's `next_cursor`, for the page after it.")


VisitPage = Page[VisitRow]


def visit_row(row: Any, distance: float | None = None) -> VisitRow:
    """A VisitRow from a row of VISIT_COLUMNS (times made aware UTC)."""
    values = dict(row)
    for name in ("entered_at", "overstayed_at", "closed_at", "exited_at"):
        values[name] = utc(values[name])
    return VisitRow(distance=distance, **values)


def on_site(connection: Connection, site: str | None = None, limit: int = MAX_ON_SITE) -> list[VisitRow]:
    """The open visits (vehicles on site), by site then entry time, oldest first."""
    conditions: list[Any] = [visits.c.closed_at.is_(None)]
    if site is not None:
        conditions.append(visits.c.site == site)
    statement = (
        select(*VISIT_COLUMNS)
        .where(*conditions)
        .order_by(visits.c.site, visits.c.entered_at, visits.c.seq)
        .limit(limit)
    )
    return [visit_row(row) for row in connection.execute(statement).mappings()]


def search_visits(connection: Connection, query: VisitQuery) -> VisitPage:
    """One page of the visits `query` finds, newest entry first (entered_at, then seq)."""
    conditions: list[Any] = []
    distances: dict[str, float] = {}
    if query.text is not None:
        if query.fuzzy and query.max_distance > 0:
            distances = near_texts(connection, query.text, query.max_distance, VISIT_TEXTS)
        else:
            distances = {query.text: 0.0}
        if not distances:
            return VisitPage(items=[])
        texts = sorted(distances)
        conditions.append(or_(visits.c.plate.in_(texts), visits.c.exit_text.in_(texts)))
    if query.site is not None:
        conditions.append(visits.c.site == query.site)
    if query.camera is not None:
        camera = query.camera
        conditions.append(or_(visits.c.entry_camera_id == camera, visits.c.exit_camera_id == camera))
    if query.state is VisitState.ON_SITE:
        conditions.append(visits.c.closed_at.is_(None))
    elif query.state is VisitState.CLOSED:
        conditions.append(visits.c.closed_at.is_not(None))
    if query.since is not None:
        conditions.append(visits.c.entered_at >= query.since)
    if query.until is not None:
        conditions.append(visits.c.entered_at < query.until)
    rows, next_cursor = newest_first(
        connection, VISIT_COLUMNS, visits.c.entered_at, visits.c.seq, conditions, query.cursor, query.limit
    )
    items = []
    for row in rows:
        near = [distances[text] for text in (row["plate"], row["exit_text"]) if text in distances]
        items.append(visit_row(row, min(near) if near else None))
    return VisitPage(items=items, next_cursor=next_cursor)
