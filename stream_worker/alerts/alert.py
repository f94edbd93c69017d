"""From a matching read, a matching voted sighting, or an operator's correction to a matching text, to
the `PlateAlert` published for it, with an id a replay reproduces."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from stream_worker.contracts import AlertOrigin, PlateAlert, PlateEvent, PlateReading, PlateSighting, Source
from stream_worker.contracts.corrections import Correction
from stream_worker.contracts.sightings import BestRead, SightingSource
from stream_worker.plates.matching import Match

# Its own namespace: an alert id never equals an event or a sighting id built from the same position.
ALERT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "stream-worker/plate-alert")


def _alert_id(camera_id: str, plate: str, list_name: str, origin: str) -> str:
    return str(uuid.uuid5(ALERT_NAMESPACE, f"{camera_id}\x1f{plate}\x1f{list_name}\x1f{origin}"))


def _entry_fields(match: Match) -> dict[str, Any]:
    """What every alert says of the watch-list entry matched, and how it matched."""
    entry = match.entry
    return {
        "list": entry.list,
        "label": entry.label,
        "plate": entry.plate,
        "match_kind": match.kind,
        "distance": match.distance,
        "candidate": match.candidate,
    }


def _pass_fields(sighting_id: str, best: BestRead, reads: SightingSource) -> dict[str, Any]:
    """Where a sighting's or a correction's alert points: the sighting, its best read's frame, box
    and zone, and (`source`) its first read."""
    return {
        "sighting_id": sighting_id,
        "frame_id": best.frame_id,
        "event_id": best.event_id,
        "captured_at": best.captured_at,
        "box": best.box,
        "frame_source": best.source,
        "zone": best.zone,
        "source": Source(topic=reads.topic, partition=reads.partition, offset=reads.first_offset),
    }


def alert_id(camera_id: str, plate: str, list_name: str, source: Source) -> str:
    """The same camera, entry and first matching read (plates topic position) give the same id:
    a pass read again after a crash is alerted again with the id it had."""
    return _alert_id(camera_id, plate, list_name, f"{source.topic}:{source.partition}:{source.offset}")


def build_alert(
    event: PlateEvent, reading: PlateReading, match: Match, source: Source, alerted_at: datetime
) -> PlateAlert:
    """The alert for `reading` of `event` (found at `source` in the plates topic) matching `match`."""
    return PlateAlert(
        alert_id=alert_id(event.camera_id, match.entry.plate, match.entry.list, source),
        **_entry_fields(match),
        confidence=reading.confidence,
        camera_id=event.camera_id,
        frame_id=event.frame_id,
        event_id=event.event_id,
        captured_at=event.captured_at,
        box=reading.box,
        source=source,
        frame_source=event.source,
        alerted_at=alerted_at,
        recognizer=reading.recognizer,
        country=reading.country,
        plate_format=reading.plate_format,
        zone=reading.zone,
    )


def sighting_alert_id(camera_id: str, plate: str, list_name: str, sighting_id: str) -> str:
    """The same camera, entry and sighting give the same id: a sighting read again after a crash
    is alerted again with the id it had. Never a read alert's id: those end in a
    `topic:partition:offset` position, these in `sighting:` and a UUID (which has no colon)."""
    return _alert_id(camera_id, plate, list_name, f"sighting:{sighting_id}")


def build_sighting_alert(
    sighting: PlateSighting, match: Match, rank: int, score: float, alerted_at: datetime
) -> PlateAlert:
    """The alert for `sighting` whose candidate of rank `rank` (vote score `score`) matched `match`:
    the frame, box and positions are its best read's; `source` is the sighting's first read."""
    return PlateAlert(
        alert_id=sighting_alert_id(
            sighting.camera_id, match.entry.plate, match.entry.list, sighting.sighting_id
        ),
        origin=AlertOrigin.SIGHTING,
        candidate_rank=rank,
        **_entry_fields(match),
        confidence=score,
        camera_id=sighting.camera_id,
        **_pass_fields(sighting.sighting_id, sighting.best_read, sighting.source),
        alerted_at=alerted_at,
        recognizer=sighting.recognizer,
        country=sighting.country,
        plate_format=sighting.plate_format,
        direction=sighting.direction,
    )


def correction_alert_id(camera_id: str, plate: str, list_name: str, sighting_id: str) -> str:
    """The same camera, entry and corrected sighting give the same id, however often the correction
    is read or saved; never a sighting alert's id (`correction:` where those have `sighting:`)."""
    return _alert_id(camera_id, plate, list_name, f"correction:{sighting_id}")


def build_correction_alert(correction: Correction, match: Match, alerted_at: datetime) -> PlateAlert:
    """The alert for the corrected text of `correction` matching `match`: the frame, box and
    positions are the sighting's best read's (the correction carries them); `source` is the
    sighting's first read. Confidence 1: an operator read the plate."""
    best, reads = correction.best_read, correction.source
    if best is None or reads is None:
        raise ValueError(f"the correction of {correction.sighting_id} carries no best read")
    entry = match.entry
    return PlateAlert(
        alert_id=correction_alert_id(correction.camera_id, entry.plate, entry.list, correction.sighting_id),
        origin=AlertOrigin.CORRECTION,
        corrected_from=correction.old_text,
        **_entry_fields(match),
        confidence=1.0,
        camera_id=correction.camera_id,
        **_pass_fields(correction.sighting_id, best, reads),
        alerted_at=alerted_at,
        country=correction.country,
    )
