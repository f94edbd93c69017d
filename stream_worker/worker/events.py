"""From a frame's Triton result to the record to publish: a `PlateEvent` or a dead-letter record."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stream_worker.contracts import (
    PLATE_FORMAT,
    Box,
    ErrorReason,
    ErrorStage,
    ImageSize,
    ModelInfo,
    PlateEvent,
    PlateLayout,
    PlateReading,
    Point,
    Source,
    event_revision,
)
from stream_worker.plates.reading import Reading
from stream_worker.recognition import INVALID_IMAGE, FrameResult, Plate
from stream_worker.service.dead_letters import dead_letter_headers, without_value
from stream_worker.worker.validate import Frame, Headers, InputRecord, Rejection

# Fixed forever: event ids must stay the same across versions and restarts for deduplication.
EVENT_ID_NAMESPACE = uuid.UUID("6f1d3c52-8a4e-5b7a-9c2d-3e5f7a9b1c4d")
_PLATE_PATTERN = re.compile(PLATE_FORMAT)


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """A record to publish for one input offset."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers
    dead_letter_reason: ErrorReason | None = None  # None for a PlateEvent

    def without_value(self) -> OutgoingRecord:
        """This dead letter minus the frame, for when the broker refuses it as too large."""
        headers = without_value(self.headers, self.value)
        return OutgoingRecord(self.topic, self.key, None, headers, self.dead_letter_reason)


def event_id(topic: str, partition: int, offset: int) -> str:
    """Deterministic: the same input record always yields the same id (consumers dedupe on it)."""
    return str(uuid.uuid5(EVENT_ID_NAMESPACE, f"{topic}:{partition}:{offset}"))


def format_valid(text: str) -> bool:
    return _PLATE_PATTERN.match(text) is not None


def build_event(
    frame: Frame,
    result: FrameResult,
    model: ModelInfo,
    processed_at: datetime,
    now_monotonic: float,
    kept: Sequence[tuple[Plate, str | None]] | None = None,
    readings: Sequence[Reading | None] | None = None,
) -> PlateEvent:
    """`kept`: the plates to publish with their zones (the camera's settings, camera_rules.py);
    None: all of the result's plates, without zones. `readings`: per kept plate, its reading through
    the camera's region (worker/reading.py), None for Triton's own text (no region)."""
    if kept is None:
        kept = [(plate, None) for plate in result.plates]
    if readings is None:
        readings = [None] * len(kept)
    plates = [
        _plate_reading(plate, zone, reading) for (plate, zone), reading in zip(kept, readings, strict=True)
    ]
    return PlateEvent(
        schema_revision=event_revision(plates),
        **_frame_fields(frame, model, processed_at, now_monotonic),
        image=ImageSize(width=result.width, height=result.height),
        plates=plates,
    )


def _frame_fields(
    frame: Frame, model: ModelInfo, processed_at: datetime, now_monotonic: float
) -> dict[str, Any]:
    """What every event says of its frame: its id (from the frame's position), the camera, the
    times, the position and the model."""
    record = frame.record
    return {
        "event_id": event_id(record.topic, record.partition, record.offset),
        "camera_id": frame.camera_id,
        "frame_id": frame.frame_id,
        "captured_at": frame.captured_at,
        "processed_at": processed_at,
        "source": Source(topic=record.topic, partition=record.partition, offset=record.offset),
        "model": model,
        "latency_ms": round(max(0.0, now_monotonic - record.received_at) * 1000, 3),
    }


def _plate_reading(plate: Plate, zone: str | None, reading: Reading | None) -> PlateReading:
    text, confidence, characters = plate.text, plate.confidence, plate.character_confidences
    if reading is not None:
        text, confidence, characters = reading.text, reading.confidence, reading.character_confidences
    return PlateReading(
        text=text,
        # Rounded so that a frame reads the same whatever batch it rode in: float noise
        # of batched kernels stays below the 4th decimal.
        confidence=round(confidence, 4),
        box=Box(**dict(zip(("x1", "y1", "x2", "y2"), (round(v, 2) for v in plate.box), strict=True))),
        detection_score=round(plate.detection_score, 4),
        format_valid=format_valid(text) if reading is None else reading.format_valid,
        corners=[Point(x=round(x, 2), y=round(y, 2)) for x, y in plate.corners] or None,
        character_confidences=[round(c, 4) for c in characters] or None,
        layout=PlateLayout(plate.layout),
        image=base64.b64encode(plate.image).decode("ascii") if plate.image else None,
        zone=zone,
        recognizer=None if reading is None else reading.recognizer,
        country=None if reading is None else reading.country,
        plate_format=None if reading is None else reading.format,
    )


def not_examined_event(
    frame: Frame, width: int, height: int, model: ModelInfo, processed_at: datetime, now_monotonic: float
) -> PlateEvent:
    """The event of a frame the camera's motion gate kept from Triton (worker/gating.py): no plates
    because nothing was looked at, which `examined: false` says (revision 4)."""
    return PlateEvent(
        schema_revision=event_revision([], examined=False),
        **_frame_fields(frame, model, processed_at, now_monotonic),
        image=ImageSize(width=width, height=height),
        plates=[],
        examined=False,
    )


def rejection_for(result: FrameResult) -> Rejection | None:
    """Why Triton's answer for a frame is a dead letter, or None when the frame was read."""
    if result.ok:
        return None
    if result.status.startswith(INVALID_IMAGE):
        detail = result.status.removeprefix(INVALID_IMAGE).lstrip(": ").strip() or result.status
        return Rejection(ErrorStage.DECODE, ErrorReason.INVALID_IMAGE, detail)
    return Rejection(
        ErrorStage.INFERENCE, ErrorReason.INFERENCE_FAILED, f"Triton frame status {result.status!r}"
    )


def event_record(topic: str, event: PlateEvent) -> OutgoingRecord:
    return OutgoingRecord(topic=topic, key=event.camera_id.encode(), value=event.to_json(), headers=[])


def dead_letter_record(topic: str, record: InputRecord, rejection: Rejection) -> OutgoingRecord:
    """The original key, value and headers, plus the error and source headers (replacing stale ones)."""
    headers = dead_letter_headers(
        record.headers,
        rejection.stage,
        rejection.reason,
        rejection.detail,
        record.topic,
        record.partition,
        record.offset,
    )
    return OutgoingRecord(
        topic=topic, key=record.key, value=record.value, headers=headers, dead_letter_reason=rejection.reason
    )


def now_utc() -> datetime:
    return datetime.now(UTC)
