"""From a closed group of reads to the `PlateSighting` published for it."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from stream_worker.contracts import (
    BestRead,
    Box,
    ClosedBy,
    PlateSighting,
    Point,
    SightingCandidate,
    SightingSource,
)
from stream_worker.contracts.plate_formats import Region
from stream_worker.sightings.direction import DirectionRules, direction
from stream_worker.sightings.grouping import Group
from stream_worker.sightings.reads import Read
from stream_worker.sightings.voting import DEFAULT_FORMAT, TextRead, Vote, vote

# Fixed forever: sighting ids must stay the same across versions and restarts for deduplication.
SIGHTING_ID_NAMESPACE = uuid.UUID("3a7c1e9b-5d2f-5e4a-8b6c-1f0d9e2a7b3c")


@dataclass(frozen=True, slots=True)
class VotingRules:
    candidates: int = 5
    direction: DirectionRules = field(default_factory=DirectionRules)
    plate_format: re.Pattern[str] = DEFAULT_FORMAT  # what a plate of the camera looks like
    # The camera's region (None: none, or `ru`): the sighting then says which of its formats the voted
    # text fits (country, plate_format) and what read it (the best read's recognizer).
    region: Region | None = None


def sighting_id(camera_id: str, topic: str, first_read: Read) -> str:
    """Deterministic: camera and the plates-topic position of the group's first read."""
    partition, offset, index = first_read.position
    return str(uuid.uuid5(SIGHTING_ID_NAMESPACE, f"{camera_id}:{topic}:{partition}:{offset}:{index}"))


def best_read(reads: list[Read], voted: Vote) -> Read:
    """A read of the voted text, the surest (then the largest box, then the first); else the surest."""
    agreeing = [read for read in reads if read.text == voted.text] or reads
    return min(agreeing, key=lambda read: (-read.confidence, -read.width, read.position))


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def build_sighting(
    group: Group, reason: ClosedBy, topic: str, closed_at: datetime, rules: VotingRules = VotingRules()
) -> PlateSighting:
    reads = sorted(group.reads, key=lambda read: read.position)
    voted = vote(
        [TextRead(read.text, read.confidences) for read in reads], rules.candidates, rules.plate_format
    )
    best = best_read(reads, voted)
    partition = reads[0].position[0]
    fitted = rules.region.fit(voted.text) if rules.region is not None else None
    return PlateSighting(
        sighting_id=sighting_id(group.camera_id, topic, reads[0]),
        camera_id=group.camera_id,
        text=voted.text,
        confidence=voted.confidence,
        format_valid=voted.format_valid,
        candidates=[SightingCandidate(text=c.text, score=c.score) for c in voted.candidates],
        reads=len(reads),
        first_seen=_utc(group.first_time),
        last_seen=_utc(group.last_time),
        direction=direction([(read.time, read.box) for read in reads], rules.direction),
        best_read=BestRead(
            frame_id=best.frame_id,
            event_id=best.event_id,
            source=best.frame_source,
            captured_at=best.captured_at,
            text=best.text,
            confidence=best.confidence,
            box=Box(x1=best.box[0], y1=best.box[1], x2=best.box[2], y2=best.box[3]),
            corners=[Point(x=x, y=y) for x, y in best.corners] if best.corners else None,
            image=best.image,
            zone=best.zone,
        ),
        closed_by=reason,
        closed_at=closed_at,
        source=SightingSource(
            topic=topic, partition=partition, first_offset=reads[0].offset, last_offset=reads[-1].offset
        ),
        recognizer=best.recognizer if rules.region is not None else None,
        country=fitted.country if fitted is not None else None,
        plate_format=fitted.name if fitted is not None else None,
    )
