"""Builders of the PlateSightings, PlateAlerts and PlateVisits the history store's tests write (importable:
pytest's pythonpath has tests/). Each id is derived from the arguments' `name`, so a test names its
records and finds them again."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta

from stream_worker.cameras.status import CameraStatus
from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.sightings import PlateSighting
from stream_worker.contracts.visits import PlateVisit, VisitEventKind, visit_event_id, visit_id

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# Not a real photo: a few bytes that start and end like a JPEG (the store keeps them as given).
FAKE_JPEG = b"\xff\xd8\xff\xe0store-test\xff\xd9"


def sighting_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sighting:{name}"))


def alert_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"alert:{name}"))


def plate_sighting(
    name: str,
    text: str,
    last_seen: datetime = T0,
    camera_id: str = "gate",
    zone: str | None = None,
    direction: str | None = "approaching",
    picture: bytes | None = None,
    candidates: list[tuple[str, float]] | None = None,
) -> PlateSighting:
    """One sighting of `text`, last seen at `last_seen` (first seen 3 s before)."""
    best_read: dict[str, object] = {
        "frame_id": f"{camera_id}/{name}",
        "event_id": f"event-{name}",
        "source": {"topic": "frames", "partition": 0, "offset": 7},
        "captured_at": last_seen,
        "text": text,
        "confidence": 0.97,
        "box": {"x1": 100, "y1": 200, "x2": 260, "y2": 240},
    }
    if picture is not None:
        best_read["image"] = base64.b64encode(picture).decode()
    if zone is not None:
        best_read["zone"] = zone
    return PlateSighting.model_validate(
        {
            "sighting_id": sighting_id(name),
            "camera_id": camera_id,
            "text": text,
            "confidence": 0.91,
            "format_valid": True,
            "candidates": [{"text": t, "score": s} for t, s in (candidates or [(text, 0.91)])],
            "reads": 6,
            "first_seen": last_seen - timedelta(seconds=3),
            "last_seen": last_seen,
            "direction": direction,
            "best_read": best_read,
            "closed_by": "gap",
            "closed_at": last_seen + timedelta(seconds=2),
            "source": {"topic": "plates", "partition": 0, "first_offset": 10, "last_offset": 15},
        }
    )


def plate_alert(
    name: str,
    plate: str,
    candidate: str | None = None,
    alerted_at: datetime = T0,
    camera_id: str = "gate",
    list_name: str = "stolen",
    sighting: str | None = None,
) -> PlateAlert:
    """One alert of the watch-list entry `plate` on the read `candidate` (default: the plate)."""
    return PlateAlert.model_validate(
        {
            "alert_id": alert_id(name),
            "origin": "sighting" if sighting else "read",
            "sighting_id": sighting_id(sighting) if sighting else None,
            "candidate_rank": 0 if sighting else None,
            "list": list_name,
            "label": f"label of {plate}",
            "plate": plate,
            "match_kind": "exact" if candidate in (None, plate) else "fuzzy",
            "distance": 0.0 if candidate in (None, plate) else 0.5,
            "candidate": candidate or plate,
            "confidence": 0.9,
            "camera_id": camera_id,
            "frame_id": f"{camera_id}/{name}",
            "event_id": f"event-{name}",
            "captured_at": alerted_at - timedelta(seconds=1),
            "box": {"x1": 100, "y1": 200, "x2": 260, "y2": 240},
            "source": {"topic": "plates", "partition": 0, "offset": 3},
            "frame_source": {"topic": "frames", "partition": 0, "offset": 3},
            "alerted_at": alerted_at,
        }
    )


def camera_status(
    camera_id: str,
    at: datetime,
    published: int,
    state: str = "streaming",
    shed: int | None = 0,
    replica: str = "connector-1",
) -> CameraStatus:
    """The connector's status record of `camera_id` written at `at`, its counters as given."""
    return CameraStatus(
        camera_id=camera_id,
        state=state,
        state_since=at.timestamp() - 60,
        last_error=None,
        source="rtsp://${GATE_USER}@camera/stream",
        replica=replica,
        updated_at=at.timestamp(),
        decoded_fps=10.0,
        published_fps=5.0,
        frames_decoded=published * 2,
        frames_published=published,
        frames_static=0,
        frames_dropped=0,
        delivery_errors=0,
        reconnects=0,
        motion_share=None,
        last_frame_at=at.timestamp(),
        frames_offered=None if shed is None else published + shed,
        frames_shed=shed,
    )


def health_samples(*statuses: CameraStatus) -> list:
    """The store's samples of these status records (what `write_batch(..., health=)` takes)."""
    from stream_worker.store.camera_health import sample

    return [sample(status.camera_id, status) for status in statuses]


def plate_visit(
    name: str,
    plate: str,
    event: str = "opened",
    entered_at: datetime = T0,
    dwell: timedelta = timedelta(0),
    site: str = "depot",
    entry_camera: str = "gate",
    exit_camera: str | None = "exit",
    exit_text: str | None = None,
    overstay_s: float | None = None,
) -> PlateVisit:
    """One event of the visit `name` (its entry sighting is `sighting_id(name)`): `opened` at
    `entered_at`; `overstay` (at entered_at + overstay_s); `closed` after `dwell`, by an exit on
    `exit_camera` reading `exit_text` (default: the plate), or a re-entry when exit_camera is None."""
    kind = VisitEventKind(event)
    visit = visit_id(site, sighting_id(name))
    fields: dict[str, object] = {
        "event_id": visit_event_id(visit, kind),
        "event": kind.value,
        "visit_id": visit,
        "site": site,
        "plate": plate,
        "entry_camera_id": entry_camera,
        "entry_sighting_id": sighting_id(name),
        "entered_at": entered_at,
        "at": entered_at,
        "dwell_s": 0.0,
    }
    if kind is VisitEventKind.OPENED and overstay_s is not None:
        fields["overstay_s"] = overstay_s
    if kind is VisitEventKind.OVERSTAY:
        assert overstay_s is not None
        fields.update(
            overstay_s=overstay_s, at=entered_at + timedelta(seconds=overstay_s), dwell_s=overstay_s
        )
    if kind is VisitEventKind.CLOSED:
        fields.update(
            at=entered_at + dwell, dwell_s=dwell.total_seconds(), exit_sighting_id=sighting_id(f"{name}-out")
        )
        if exit_camera is None:
            fields["ended_by"] = "reentry"
        else:
            fields.update(
                ended_by="exit",
                exit_camera_id=exit_camera,
                exit_text=exit_text or plate,
                exited_at=entered_at + dwell,
            )
    return PlateVisit.model_validate(fields)


def stored_in(data_dir, sightings=(), alerts=(), health=(), visits=()):
    """A migrated SQLite store in `data_dir` (what `--data-dir` names) holding these records."""
    from stream_worker.store.database import Database, default_url
    from stream_worker.store.writer import write_batch

    database = Database(default_url(data_dir))
    database.migrate()
    with database.begin() as connection:
        write_batch(connection, list(sightings), list(alerts), health=list(health), batch_visits=list(visits))
    database.dispose()
    return data_dir


def counted_again(connection):
    """The reports' counts as the store keeps them, and as counting every stored sighting again
    gives them (report_counts.rebuild, then the connection's transaction rolled back): equal when
    every sighting was counted exactly once."""
    from sqlalchemy import select

    from stream_worker.store.report_counts import rebuild
    from stream_worker.store.schema import day_plates, plate_days, sighting_days, sighting_hours

    def snapshot():
        return {
            table.name: sorted(tuple(row) for row in connection.execute(select(table)))
            for table in (sighting_hours, sighting_days, plate_days, day_plates)
        }

    kept = snapshot()
    rebuild(connection)
    again = snapshot()
    connection.rollback()
    return kept, again
