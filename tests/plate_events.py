"""Builders of PlateEvents and reads for the sightings tests (importable: pytest's pythonpath has tests/).

A `Pass` is a vehicle seen by one camera: a plate text, frames at a rate, a box that moves and
grows; `frames()` gives the reads, optionally with a misread character in some of them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from stream_worker.contracts import (
    SCHEMA_REVISION,
    Box,
    ImageSize,
    ModelInfo,
    PlateEvent,
    PlateLayout,
    PlateReading,
    Point,
    Source,
)
from stream_worker.sightings.reads import Observation, Read, observation

T0 = 1_738_324_800.0  # 2025-01-31T12:00:00Z, the first frame's capture time in the tests


def plate(text: str, box: tuple[float, float, float, float], confidence: float = 0.95) -> PlateReading:
    x1, y1, x2, y2 = box
    return PlateReading(
        text=text,
        confidence=confidence,
        box=Box(x1=x1, y1=y1, x2=x2, y2=y2),
        detection_score=0.9,
        format_valid=True,
        corners=[Point(x=x1, y=y1), Point(x=x2, y=y1), Point(x=x2, y=y2), Point(x=x1, y=y2)],
        character_confidences=[confidence] * len(text),
        layout=PlateLayout.SINGLE_ROW,
    )


def plate_event(
    camera_id: str, time: float | None, plates: list[PlateReading], frame_offset: int = 0, frame_id: str = ""
) -> PlateEvent:
    captured = datetime.fromtimestamp(time, UTC) if time is not None else None
    return PlateEvent(
        schema_revision=SCHEMA_REVISION,
        event_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{camera_id}:{frame_offset}")),
        camera_id=camera_id,
        frame_id=frame_id or f"{camera_id}/{frame_offset}",
        captured_at=captured,
        processed_at=datetime.fromtimestamp(T0 + 10_000, UTC),
        source=Source(topic="frames", partition=0, offset=frame_offset),
        image=ImageSize(width=1920, height=1080),
        plates=plates,
        model=ModelInfo(name="plate_recognition", version="1"),
        latency_ms=12.5,
    )


def read(
    text: str,
    time: float,
    box: tuple[float, float, float, float] = (100, 100, 200, 130),
    offset: int = 0,
    partition: int = 0,
    index: int = 0,
    confidence: float = 0.95,
) -> Read:
    return Read(
        position=(partition, offset, index),
        time=time,
        captured_at=datetime.fromtimestamp(time, UTC),
        frame_id=f"f{offset}",
        event_id=f"e{offset}",
        frame_source=Source(topic="frames", partition=partition, offset=offset),
        text=text,
        confidence=confidence,
        confidences=(confidence,) * len(text),
        box=box,
        corners=None,
    )


def seen(camera_id: str, time: float, *reads: Read) -> Observation:
    return Observation(camera_id, time, tuple(reads))


@dataclass
class Pass:
    """One vehicle passing one camera: `frames` reads `period_s` apart from `start`, the box moving
    by (`dx`, `dy`) pixels and growing by `grow` (a factor) per frame."""

    camera_id: str
    text: str
    start: float
    frames: int = 8
    period_s: float = 0.2
    box: tuple[float, float, float, float] = (400.0, 300.0, 500.0, 330.0)
    dx: float = 0.0
    dy: float = 10.0
    grow: float = 1.04
    misreads: dict[int, str] = field(default_factory=dict)  # frame number -> the text read instead

    def at(self, frame: int) -> tuple[float, tuple[float, float, float, float]]:
        x1, y1, x2, y2 = self.box
        scale = self.grow**frame
        cx, cy = (x1 + x2) / 2 + self.dx * frame, (y1 + y2) / 2 + self.dy * frame
        w, h = (x2 - x1) * scale, (y2 - y1) * scale
        return self.start + frame * self.period_s, (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)

    def plates(self) -> list[tuple[float, PlateReading]]:
        """(capture time, plate) of each frame."""
        result = []
        for frame in range(self.frames):
            time, box = self.at(frame)
            result.append((time, plate(self.misreads.get(frame, self.text), box)))
        return result

    @property
    def end(self) -> float:
        return self.start + (self.frames - 1) * self.period_s


def timeline(passes: list[Pass], camera_id: str, until: float, period_s: float = 0.2) -> list[PlateEvent]:
    """The events of one camera: a frame every `period_s` from the first pass's start to `until`,
    each with the plates of the passes in view at that moment (frames without any are empty)."""
    mine = [p for p in passes if p.camera_id == camera_id]
    by_time: dict[float, list[PlateReading]] = {}
    for vehicle in mine:
        for time, reading in vehicle.plates():
            by_time.setdefault(round(time, 3), []).append(reading)
    start = min(p.start for p in mine)
    times = sorted(
        {round(start + k * period_s, 3) for k in range(int((until - start) / period_s) + 1)} | set(by_time)
    )
    return [plate_event(camera_id, t, by_time.get(t, []), frame_offset=k) for k, t in enumerate(times)]


def as_observation(event: PlateEvent, partition: int, offset: int) -> Observation:
    return observation(event, partition, offset)
