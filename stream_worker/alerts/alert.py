"""From a matching read, a matching voted sighting, or an operator's correction to a matching text, to
the `PlateAlert` published for it, with an id a replay reproduces."""

from __future__ import annotations

import uuid
from datetime import datetime

from stream_worker.contracts import AlertOrigin, PlateAlert, PlateEvent, PlateReading, PlateSighting, Source
from stream_worker.contracts.corrections import Correction
from stream_worker.plates.matching import Match

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
        recognizer=reading.recognizer,
        country=reading.country,
        plate_format=reading.plate_format,
        zone=reading.zone,
    )


def sighting_alert_id(camera_id: str, plate: str, list_name: str, sighting_id: str) -> str:
    """The same camera, entry and sighting give the same id: a sighting read again after a crash
    is alerted again with the id it had. Never a read alert's id: those end in a
    `topic:partition:offset` position, these in `sighting:` and a UUID (which has no colon)."""
    name = f"{camera_id}\x1f{plate}\x1f{list_name}\x1fsighting:{sighting_id}"
    return str(uuid.uuid5(ALERT_NAMESPACE, name))


def build_sighting_alert(
    sighting: PlateSighting, match: Match, rank: int, score: float, alerted_at: datetime
) -> PlateAlert:
    """The alert for `sighting` whose candidate of rank `rank` (vote score `score`) matched `match`:
    the frame, box and positions are its best read's; `source` is the sighting's first read."""
    entry = match.entry
    best = sighting.best_read
    first = Source(
        topic=sighting.source.topic, partition=sighting.source.partition, offset=sighting.source.first_offset
    )
    return PlateAlert(
        alert_id=sighting_alert_id(sighting.camera_id, entry.plate, entry.list, sighting.sighting_id),
        origin=AlertOrigin.SIGHTING,
        sighting_id=sighting.sighting_id,
        candidate_rank=rank,
        list=entry.list,
        label=entry.label,
        plate=entry.plate,
        match_kind=match.kind,
        distance=match.distance,
        candidate=match.candidate,
        confidence=score,
        camera_id=sighting.camera_id,
        frame_id=best.frame_id,
        event_id=best.event_id,
        captured_at=best.captured_at,
        box=best.box,
        source=first,
        frame_source=best.source,
        alerted_at=alerted_at,
        recognizer=sighting.recognizer,
        country=sighting.country,
        plate_format=sighting.plate_format,
        zone=best.zone,
        direction=sighting.direction,
    )


def correction_alert_id(camera_id: str, plate: str, list_name: str, sighting_id: str) -> str:
    """The same camera, entry and corrected sighting give the same id, however often the correction
    is read or saved; never a sighting alert's id (`correction:` where those have `sighting:`)."""
    name = f"{camera_id}\x1f{plate}\x1f{list_name}\x1fcorrection:{sighting_id}"
    return str(uuid.uuid5(ALERT_NAMESPACE, name))


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
        sighting_id=correction.sighting_id,
        corrected_from=correction.old_text,
        list=entry.list,
        label=entry.label,
        plate=entry.plate,
        match_kind=match.kind,
        distance=match.distance,
        candidate=match.candidate,
        confidence=1.0,
        camera_id=correction.camera_id,
        frame_id=best.frame_id,
        event_id=best.event_id,
        captured_at=best.captured_at,
        box=best.box,
        source=Source(topic=reads.topic, partition=reads.partition, offset=reads.first_offset),
        frame_source=best.source,
        alerted_at=alerted_at,
        country=correction.country,
        zone=best.zone,
    )
