"""From a record of the plates topic to what grouping needs: the camera, its time and its reads.

The camera's time is the frame's `captured_at`, or the event's `processed_at` when the camera sent
none: both are in the event, so replaying a record always gives the same time. Plates read as an
empty text carry nothing to vote on and are left out. Revision-1 events have no per-character
confidences; each character then gets the plate's confidence. A frame that the worker's motion
gate did not send to the recognizer (`examined: false`) is an observation with no reads that says
so: grouping must not take it for a frame in which the plate was looked for and not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import ValidationError

from stream_worker.contracts import PlateEvent, Source

Box = tuple[float, float, float, float]
Position = tuple[int, int, int]  # (partition, offset, plate index) in the plates topic


@dataclass(frozen=True, slots=True)
class Read:
    """One plate in one frame."""

    position: Position
    time: float  # the camera's time, epoch seconds
    captured_at: datetime | None
    frame_id: str
    event_id: str
    frame_source: Source
    text: str
    confidence: float
    confidences: tuple[float, ...]  # one per character of `text`
    box: Box
    corners: tuple[tuple[float, float], ...] | None
    image: str | None = None  # the plate's picture (base64 JPEG) when the event carries one
    zone: str | None = None  # the camera's zone holding the plate, when the event names one
    recognizer: str | None = None  # what read it, when the event says (cameras with a region)

    @property
    def offset(self) -> int:
        return self.position[1]

    @property
    def width(self) -> float:
        return self.box[2] - self.box[0]

    @property
    def centre(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


@dataclass(frozen=True, slots=True)
class Observation:
    """One PlateEvent: a frame of one camera at one time, with its reads (maybe none)."""

    camera_id: str
    time: float
    reads: tuple[Read, ...]
    examined: bool = True  # False: nothing was looked for in the frame (motion gating, static)


class InvalidEvent(ValueError):
    """The record is not a PlateEvent."""


def parse_event(value: bytes | None, partition: int, offset: int) -> Observation:
    """The observation in a plates record; `InvalidEvent` when the value is not a PlateEvent."""
    if not value:
        raise InvalidEvent("empty record")
    try:
        event = PlateEvent.model_validate_json(value)
    except ValidationError as error:
        raise InvalidEvent(
            f"not a PlateEvent: {error.error_count()} problem(s), first: {error.errors()[0]['msg']}"
        ) from None
    return observation(event, partition, offset)


def observation(event: PlateEvent, partition: int, offset: int) -> Observation:
    when = event.captured_at or event.processed_at
    time = when.timestamp()
    reads = []
    for index, plate in enumerate(event.plates):
        if not plate.text:
            continue
        confidences = plate.character_confidences
        if confidences is None or len(confidences) != len(plate.text):
            confidences = [plate.confidence] * len(plate.text)
        box = plate.box
        reads.append(
            Read(
                position=(partition, offset, index),
                time=time,
                captured_at=event.captured_at,
                frame_id=event.frame_id,
                event_id=event.event_id,
                frame_source=event.source,
                text=plate.text,
                confidence=plate.confidence,
                confidences=tuple(confidences),
                box=(box.x1, box.y1, box.x2, box.y2),
                corners=tuple((p.x, p.y) for p in plate.corners) if plate.corners else None,
                image=plate.image,
                zone=plate.zone,
                recognizer=plate.recognizer,
            )
        )
    return Observation(event.camera_id, time, tuple(reads), examined=event.examined is not False)
