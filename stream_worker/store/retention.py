"""What the store deletes: rows past the retention period (sightings, alerts, visits, the cameras'
health samples), and a plate's whole history on request (`stream-worker store forget PLATE`: plate
texts are personal data). Visits go by when they began (retention) and by their entry or exit
text (forget).

Pictures and corrections go with their sighting (a foreign key ON DELETE CASCADE, and explicitly
here, since a SQLite connection without foreign keys would keep them), and the reports' counts
lose it (report_counts.py). The fuzzy-search variants of a plate key no sighting, correction nor
visit has any more are deleted too, so a forgotten plate leaves no trace in the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, exists, or_, select

from stream_worker.contracts.watchlist import normalise_plate
from stream_worker.store import report_counts
from stream_worker.store.plate_keys import fold
from stream_worker.store.queries import add_audit
from stream_worker.store.schema import (
    alerts,
    camera_health,
    corrections,
    pictures,
    plate_variants,
    sightings,
    visits,
)

CHUNK = 500  # ids per DELETE statement: SQLite's parameter limit stays far away


@dataclass(frozen=True, slots=True)
class Deleted:
    sightings: int = 0
    alerts: int = 0
    pictures: int = 0
    variants: int = 0
    health: int = 0
    visits: int = 0


def delete_sightings(connection: Connection, ids: list[str]) -> tuple[int, int]:
    """Delete the sightings, their pictures and corrections, and take them off the reports' counts
    (those this DELETE removed: a replica deleting the same rows at once counts nothing twice);
    (sightings, pictures) deleted."""
    removed_pictures = removed = 0
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        removed_pictures += connection.execute(
            delete(pictures).where(pictures.c.sighting_id.in_(chunk))
        ).rowcount
        connection.execute(delete(corrections).where(corrections.c.sighting_id.in_(chunk)))
        gone = delete(sightings).where(sightings.c.sighting_id.in_(chunk)).returning(*report_counts.COUNTED)
        counted = connection.execute(gone).all()
        report_counts.remove(connection, counted)
        removed += len(counted)
    return removed, removed_pictures


def _delete_orphan_variants(connection: Connection, keys: set[str]) -> int:
    removed = 0
    for key in keys:
        used = exists().where(sightings.c.text_key == key)
        corrected = exists().where(corrections.c.text_key == key)
        visited = exists().where(visits.c.text_key == key)
        if not connection.execute(select(or_(used, corrected, visited))).scalar():
            removed += connection.execute(
                delete(plate_variants).where(plate_variants.c.text_key == key)
            ).rowcount
    return removed


def expire(connection: Connection, retention_days: float, now: datetime | None = None) -> Deleted:
    """Delete sightings last seen, alerts raised, visits begun and cameras' health hours begun more
    than `retention_days` ago (0: none)."""
    if retention_days <= 0:
        return Deleted()
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    old = connection.execute(
        select(sightings.c.sighting_id, sightings.c.text_key).where(sightings.c.last_seen < cutoff)
    ).all()
    removed, removed_pictures = delete_sightings(connection, [row.sighting_id for row in old])
    removed_alerts = connection.execute(delete(alerts).where(alerts.c.alerted_at < cutoff)).rowcount
    old_visits = connection.execute(select(visits.c.text_key).where(visits.c.entered_at < cutoff)).scalars()
    keys = {row.text_key for row in old} | set(old_visits)
    removed_visits = connection.execute(delete(visits).where(visits.c.entered_at < cutoff)).rowcount
    removed_variants = _delete_orphan_variants(connection, keys)
    removed_health = connection.execute(delete(camera_health).where(camera_health.c.hour < cutoff)).rowcount
    return Deleted(
        removed, removed_alerts, removed_pictures, removed_variants, removed_health, removed_visits
    )


def forget(connection: Connection, plate: str, user: str = "cli", now: datetime | None = None) -> Deleted:
    """Erase every sighting whose text (or corrected text) is `plate` or one of its look-alikes
    (the same folded key: B840OK197 for B840CK197), its pictures, the alerts on any of those
    texts, and the visits whose entry or exit text is one of them."""
    key = fold(plate)
    corrected = select(corrections.c.sighting_id).where(corrections.c.text_key == key)
    found = connection.execute(
        select(sightings.c.sighting_id, sightings.c.text).where(
            or_(sightings.c.text_key == key, sightings.c.sighting_id.in_(corrected))
        )
    ).all()
    texts = {row.text for row in found} | {normalise_plate(plate)}
    ids = [row.sighting_id for row in found]
    removed, removed_pictures = delete_sightings(connection, ids)
    removed_alerts = 0
    for start in range(0, max(len(ids), 1), CHUNK):
        chunk = ids[start : start + CHUNK]
        removed_alerts += connection.execute(
            delete(alerts).where(
                or_(alerts.c.plate.in_(texts), alerts.c.candidate.in_(texts), alerts.c.sighting_id.in_(chunk))
            )
        ).rowcount
    gone = or_(visits.c.text_key == key, visits.c.plate.in_(texts), visits.c.exit_text.in_(texts))
    removed_visits = connection.execute(delete(visits).where(gone)).rowcount
    removed_variants = _delete_orphan_variants(connection, {key})
    deleted = Deleted(removed, removed_alerts, removed_pictures, removed_variants, visits=removed_visits)
    # The audit row names the key's size, not the plate: the point is that it is gone.
    detail = {"sightings": removed, "alerts": removed_alerts, "visits": removed_visits}
    add_audit(connection, user, "store.forget", detail, now)
    return deleted
