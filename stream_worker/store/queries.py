"""The history store's reads (and the console's few writes: alert acknowledgements, audit rows)
for the console's pages, its HTTP API and the CLI. Each takes an open SQLAlchemy `Connection`
(`Database.connect()`; for the writes `Database.begin()`, whose transaction commits on exit) and
returns the models of rows.py.

The live feed polls `recent_sightings` / `recent_alerts` with the largest `seq` it has shown. With
several store replicas writing one PostgreSQL, a row can commit after a row with a larger seq: a
poller that moved past it would skip it, so the feed is a view of what is stored, not a ledger
(search and the alert list read the table itself).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from stream_worker.store.keyset import live_feed, newest_first
from stream_worker.store.rows import (
    AlertRow,
    AuditRow,
    CameraSeen,
    Page,
    SightingDetail,
    SightingRow,
    utc,
)
from stream_worker.store.schema import alerts as alerts_table
from stream_worker.store.schema import audit as audit_table
from stream_worker.store.schema import pictures, sightings
from stream_worker.store.search import MAX_LIMIT, SUMMARY_COLUMNS, summary

AlertPage = Page[AlertRow]

ALERT_COLUMNS = (
    alerts_table.c.seq,
    alerts_table.c.alert_id,
    alerts_table.c.sighting_id,
    alerts_table.c.camera_id,
    alerts_table.c.list,
    alerts_table.c.label,
    alerts_table.c.plate,
    alerts_table.c.candidate,
    alerts_table.c.match_kind,
    alerts_table.c.distance,
    alerts_table.c.confidence,
    alerts_table.c.origin,
    alerts_table.c.captured_at,
    alerts_table.c.alerted_at,
    alerts_table.c.acknowledged_at,
    alerts_table.c.acknowledged_by,
    alerts_table.c.corrected_text,
    alerts_table.c.corrected_at,
)


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be 1 to {MAX_LIMIT}, got {limit}")
    return limit


# --- sightings ----------------------------------------------------------------------------------
def sighting(connection: Connection, sighting_id: str) -> SightingDetail | None:
    """One sighting with its candidates and whole record; None when it is not stored (or was
    forgotten, or aged out)."""
    row = (
        connection.execute(
            select(
                *SUMMARY_COLUMNS,
                sightings.c.closed_at,
                sightings.c.stored_at,
                sightings.c.candidates,
                sightings.c.record,
            ).where(sightings.c.sighting_id == sighting_id)
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    base = summary(row).model_dump()
    return SightingDetail(
        **base,
        closed_at=utc(row["closed_at"]),
        stored_at=utc(row["stored_at"]),
        candidates=list(row["candidates"] or []),
        record=dict(row["record"] or {}),
    )


def picture(connection: Connection, sighting_id: str) -> bytes | None:
    """The sighting's plate picture (JPEG bytes); None when it has none or is not stored."""
    jpeg = connection.execute(select(pictures.c.jpeg).where(pictures.c.sighting_id == sighting_id)).scalar()
    return None if jpeg is None else bytes(jpeg)


def recent_sightings(
    connection: Connection, after_seq: int | None = None, limit: int = 50
) -> list[SightingRow]:
    """The live feed: sightings stored after `after_seq`, oldest first, at most `limit` (poll
    again from the last one's seq). Without `after_seq`: the newest `limit`, oldest first."""
    _limit(limit)
    return [summary(row) for row in live_feed(connection, SUMMARY_COLUMNS, sightings.c.seq, after_seq, limit)]


def cameras_seen(connection: Connection) -> list[CameraSeen]:
    """Every camera with stored sightings and the last time one of them was seen, by camera id.

    One index probe per camera (the (camera_id, last_seen) index: next camera id, then its
    latest time) rather than a scan of every sighting.
    """
    seen: list[CameraSeen] = []
    camera = connection.execute(select(func.min(sightings.c.camera_id))).scalar()
    while camera is not None:
        last = connection.execute(
            select(func.max(sightings.c.last_seen)).where(sightings.c.camera_id == camera)
        ).scalar()
        seen.append(CameraSeen(camera_id=camera, last_seen=utc(last)))
        camera = connection.execute(
            select(func.min(sightings.c.camera_id)).where(sightings.c.camera_id > camera)
        ).scalar()
    return seen


# --- alerts -------------------------------------------------------------------------------------
def _alert(row: Any) -> AlertRow:
    values = dict(row)
    for name in ("captured_at", "alerted_at", "acknowledged_at", "corrected_at"):
        values[name] = utc(values[name])
    return AlertRow(**values)


def alerts(
    connection: Connection,
    acknowledged: bool | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> AlertPage:
    """Alerts newest first (alerted_at, then seq), one page: all of them (`acknowledged` None),
    only the acknowledged ones (True) or only those still to acknowledge (False). ValueError for a
    cursor this function did not make."""
    _limit(limit)
    conditions: list[Any] = []
    if acknowledged is True:
        conditions.append(alerts_table.c.acknowledged_at.is_not(None))
    elif acknowledged is False:
        conditions.append(alerts_table.c.acknowledged_at.is_(None))
    rows, next_cursor = newest_first(
        connection, ALERT_COLUMNS, alerts_table.c.alerted_at, alerts_table.c.seq, conditions, cursor, limit
    )
    items = [_alert(row) for row in rows]
    return AlertPage(items=items, next_cursor=next_cursor)


def alert(connection: Connection, alert_id: str) -> AlertRow | None:
    """One alert; None when it is not stored."""
    row = (
        connection.execute(select(*ALERT_COLUMNS).where(alerts_table.c.alert_id == alert_id))
        .mappings()
        .first()
    )
    return None if row is None else _alert(row)


def recent_alerts(connection: Connection, after_seq: int | None = None, limit: int = 50) -> list[AlertRow]:
    """The live feed's alerts, as `recent_sightings`: after `after_seq` oldest first, or the newest
    `limit` oldest first."""
    _limit(limit)
    return [_alert(row) for row in live_feed(connection, ALERT_COLUMNS, alerts_table.c.seq, after_seq, limit)]


def acknowledge(
    connection: Connection, alert_id: str, user: str, now: datetime | None = None
) -> AlertRow | None:
    """Mark the alert acknowledged by `user` and write an audit row; an alert already acknowledged
    keeps its first acknowledgement (and no audit row is added). None when the alert is not stored.
    Run it in a transaction (`Database.begin()`)."""
    at = utc(now) or datetime.now(UTC)
    changed = connection.execute(
        update(alerts_table)
        .where(alerts_table.c.alert_id == alert_id, alerts_table.c.acknowledged_at.is_(None))
        .values(acknowledged_at=at, acknowledged_by=user)
    ).rowcount
    if changed:
        add_audit(connection, user, "alert.acknowledge", {"alert_id": alert_id}, at)
    return alert(connection, alert_id)


# --- audit --------------------------------------------------------------------------------------
def add_audit(
    connection: Connection, user: str, action: str, detail: Any, now: datetime | None = None
) -> None:
    """Record one change (who, what, the details as JSON); part of the caller's transaction."""
    at = utc(now) or datetime.now(UTC)
    connection.execute(insert(audit_table).values(at=at, user=user, action=action, detail=detail))


def audit(connection: Connection, limit: int = 100, before_seq: int | None = None) -> list[AuditRow]:
    """The latest changes, newest first; `before_seq` (the last row's seq) for older ones."""
    _limit(limit)
    statement = select(audit_table).order_by(audit_table.c.seq.desc()).limit(limit)
    if before_seq is not None:
        statement = statement.where(audit_table.c.seq < before_seq)
    rows = connection.execute(statement).mappings().all()
    return [AuditRow(**{**dict(row), "at": utc(row["at"])}) for row in rows]
