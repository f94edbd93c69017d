"""The sightings service's output: one voted `PlateSighting` per vehicle pass."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.cameras import MAX_NAME_LENGTH
from stream_worker.contracts.events import (
    BASE64,
    MAX_PLATE_TEXT_LENGTH,
    PLATE_FORMAT,
    PLATE_IMAGE_MAX_BASE64,
    SCHEMA_VERSION,
    Box,
    Point,
    Source,
)
from stream_worker.contracts.ids import CameraId, Uuid

MAX_CANDIDATES = 50  # the sightings service's --candidates at most


class Direction(StrEnum):
    """Direction of travel over a pass, from the trajectory of the plate's boxes."""

    APPROACHING = "approaching"  # the plate grows
    RECEDING = "receding"  # the plate shrinks
    LEFT = "left"  # crosses the image leftwards, as the camera sees it
    RIGHT = "right"
    STATIONARY = "stationary"


class ClosedBy(StrEnum):
    """Why a sighting's group of reads was closed."""

    GAP = "gap"  # the camera's frames moved on past the gap without a matching read
    SILENCE = "silence"  # the camera sent nothing for a while (wall clock)
    MAX_DURATION = "max_duration"  # the pass lasted the longest a group may last


class SightingCandidate(BaseModel):
    text: str = Field(max_length=MAX_PLATE_TEXT_LENGTH)
    score: float = Field(
        description="Product of the vote's support of each character, in [0, 1], rounded to 4 decimals."
    )


class BestRead(OmitsAbsent):
    """The read that shows the sighting best: its text is the voted one, most confidently read."""

    omitted_when_absent: ClassVar[frozenset[str]] = frozenset({"image", "zone"})

    frame_id: str
    event_id: str = Field(description="The PlateEvent the read comes from.")
    source: Source = Field(description="Where the frame itself was read (the frames topic).")
    captured_at: datetime | None
    text: str = Field(max_length=MAX_PLATE_TEXT_LENGTH)
    confidence: float
    box: Box
    corners: list[Point] | None = Field(None, min_length=4, max_length=4)
    image: str | None = Field(
        None,
        max_length=PLATE_IMAGE_MAX_BASE64,
        pattern=BASE64,
        description="The read's plate picture (its PlateReading's `image`, a base64 JPEG) when it "
        "has one; absent otherwise.",
    )
    zone: str | None = Field(
        None,
        max_length=MAX_NAME_LENGTH,
        description="The read's zone (its PlateReading's `zone`) when it has one; absent otherwise.",
    )


class SightingSource(BaseModel):
    """Where the sighting's reads are: PlateEvents of one partition of the plates topic."""

    topic: str
    partition: int = Field(ge=0)
    first_offset: int = Field(ge=0)
    last_offset: int = Field(ge=0)


# Added compatibly: what read the plate and which format it fits, left out when absent, so
# that a sighting of a camera without a region is byte-for-byte what it was.
READ_AS_FIELDS = frozenset({"country", "plate_format", "recognizer"})


class PlateSighting(OmitsAbsent):
    """One per vehicle pass on the sightings topic (key = camera id), JSON-encoded: the plate's reads
    over consecutive frames of one camera, voted into one text."""

    model_config = ConfigDict(title="PlateSighting")
    omitted_when_absent: ClassVar[frozenset[str]] = READ_AS_FIELDS

    schema_version: Literal[1] = SCHEMA_VERSION
    sighting_id: Uuid = Field(
        description="UUIDv5 of the camera id and the plates-topic position of the group's first read: "
        "a sighting published again after a restart carries the same id."
    )
    camera_id: CameraId
    text: str = Field(
        max_length=MAX_PLATE_TEXT_LENGTH,
        description="The voted text (Latin look-alikes of the Cyrillic letters).",
    )
    confidence: float = Field(
        description="Support of the voted text's least supported character in [0, 1]: the summed "
        "confidences of the reads that agree on it over the number of reads."
    )
    format_valid: bool = Field(
        description=f"Whether `text` matches the camera's `plate_format`, else its region's formats (a "
        f"camera without a region: the Russian {PLATE_FORMAT})."
    )
    candidates: list[SightingCandidate] = Field(
        max_length=MAX_CANDIDATES, description="The best texts, best first."
    )
    reads: int = Field(ge=1, description="Frames in which the plate was read.")
    first_seen: datetime = Field(description="Capture time of the first read (processing time without one).")
    last_seen: datetime
    direction: Direction | None = Field(description="null when all reads share one capture time.")
    best_read: BestRead
    closed_by: ClosedBy
    closed_at: datetime = Field(description="When the service closed the group, UTC (wall clock).")
    source: SightingSource
    recognizer: str | None = Field(
        None,
        description="Only for cameras with a region other than `ru`, else absent: the recognizer of the "
        "best read (its PlateReading's `recognizer`).",
    )
    country: str | None = Field(
        None,
        description="Only for cameras with a region other than `ru`, else absent: the country of the "
        "region's format that `text` matches; absent when it matches none.",
        examples=["us"],
    )
    plate_format: str | None = Field(
        None, description="With `country`: the name of the region's format that `text` matches."
    )

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))
