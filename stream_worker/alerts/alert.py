"""From a matching read to the `PlateAlert` published for it, with an id a replay reproduces."""

from __future__ import annotations

import uuid
from datetime import datetime

from stream_worker.alerts.matching import Match
from stream_worker.contracts import PlateAlert, PlateEvent, PlateReading, Source

# Its own namespace: an alert id never equals an event or a sighting id built from the same position.
ALERT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "stream-worker/plate-alert")


def alert_id(camera_id: str, plate: str, list_name: str, source: Source) -> str:
    """The same camera, entry and first matching read (plates topic position) give the same id:
    a pass read again after a crash is alerted again with the id it had."""
    name = f"{camera_id}\x1f{plate}\x1f{list_name}\x1f{source.topic}:{source.partition}:{source.offset}"
    return str(uuid.uuid5(ALERT_NAMESPACE, name))


def build_alert(
    event: PlateEvent, reading: PlateReading, match: Match, source: Source, alerted_at: datetime
) -> PlateAlert:
    """The alert for `reading` of `event` (found at `source` in the plates topic) matching `match`."""
    entry = match.entry
    return PlateAlert(
        alert_id=alert_id(event.camera_id, entry.plate, entry.list, source),
        list=entry.list,
        label=entry.label,
        plate=entry.plate,
        match_kind=match.kind,
        distance=match.distance,
        candidate=match.candidate,
        confidence=reading.confidence,
        camera_id=event.camera_id,
        frame_id=event.frame_id,
        event_id=event.event_id,
        captured_at=event.captured_at,
        box=reading.box,
        source=source,
        frame_source=event.source,
        alerted_at=alerted_at,
    )
