"""The worker's output: one `PlateEvent` per frame, with its plates and where they came from."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.cameras import MAX_NAME_LENGTH
from stream_worker.contracts.ids import CameraId

# schema_version: the major version, incremented only by a breaking change. schema_revision:
# incremented by each compatible addition (new optional fields), so a consumer can tell which
# fields to expect; events without it are revision 1.
SCHEMA_VERSION = 1
SCHEMA_REVISION = 2  # what an event without any revision-3 field says (byte-for-byte a revision-2 event)
# Revision 3's optional fields of each plate: left out of the JSON when absent, and an event says
# revision 3 only when one of its plates has one (`event_revision`), so that events without them stay
# byte-for-byte revision-2 events. Each revision-3 plate field belongs here.
REVISION_3_PLATE_FIELDS = frozenset({"image", "zone"})
# Revision 4's optional fields of the event itself, left out when absent in the same way: an event
# says revision 4 only when it has one. Each revision-4 event field belongs here.
REVISION_4_EVENT_FIELDS = frozenset({"examined"})
# Revision 5's optional fields of each plate (plates of every country): what read the plate
# and which format it fits, left out when absent in the same way: a plate of a camera without a region
# (or region `ru`) has none of them, so its event stays byte-for-byte what it was.
REVISION_5_PLATE_FIELDS = frozenset({"country", "plate_format", "recognizer"})
# A plate's picture: a JPEG of at most this many bytes (the BLS's pictures.PICTURE_MAX_BYTES, tested).
PLATE_IMAGE_MAX_BYTES = 16 * 1024
PLATE_IMAGE_MAX_BASE64 = 4 * -(-PLATE_IMAGE_MAX_BYTES // 3)  # its base64 text's length at most
BASE64 = r"^[A-Za-z0-9+/]*={0,2}$"
# A plate's text: longer than any plate the recognizer reads, and what the history store's columns
# hold (store/schema.py PLATE; tests/store/test_column_limits.py keeps the two in step).
MAX_PLATE_TEXT_LENGTH = 32


# Russian civil plates: letter, three digits, two letters, two- or three-digit region, using
# only the twelve Cyrillic letters that look like Latin ones (written here in Latin).
PLATE_FORMAT = r"^[ABEKMHOPCTYX]\d{3}[ABEKMHOPCTYX]{2}\d{2,3}$"


class Source(BaseModel):
    topic: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=0)


class ImageSize(BaseModel):
    width: int = Field(ge=0)
    height: int = Field(ge=0)


class Box(BaseModel):
    """Plate corners in the source image's pixels."""

    x1: float
    y1: float
    x2: float
    y2: float


class Point(BaseModel):
    x: float
    y: float


class PlateLayout(StrEnum):
    SINGLE_ROW = "single_row"
    DOUBLE_ROW = "double_row"


class PlateReading(OmitsAbsent):
    omitted_when_absent: ClassVar[frozenset[str]] = REVISION_3_PLATE_FIELDS | REVISION_5_PLATE_FIELDS

    text: str = Field(
        max_length=MAX_PLATE_TEXT_LENGTH,
        description="Recognised characters (Latin look-alikes of the Cyrillic letters).",
    )
    confidence: float = Field(
        description="Recogniser confidence in [0, 1]: the least sure character's, rounded to 4 decimals."
    )
    box: Box
    detection_score: float = Field(
        description="The detector's score for the plate in [0, 1] (objectness x layout probability for "
        "the learned detector), rounded to 4 decimals."
    )
    format_valid: bool = Field(
        description=f"Whether `text` matches the Russian plate pattern {PLATE_FORMAT}; for a plate with "
        "`recognizer` (revision 5), whether it matches one of its camera's region's formats."
    )
    corners: list[Point] | None = Field(
        None,
        min_length=4,
        max_length=4,
        description="Since revision 2. The plate's four corners in source pixels: top-left, top-right, "
        "bottom-right, bottom-left (a tilted plate's quadrilateral; the box's corners from the Haar "
        "fallback). Rounded to 2 decimals.",
    )
    character_confidences: list[float] | None = Field(
        None,
        description="Since revision 2. One confidence in [0, 1] per character of `text`, in order, "
        "rounded to 4 decimals; `confidence` is their minimum.",
    )
    layout: PlateLayout | None = Field(
        None, description="Since revision 2. Single- or double-row plate, as the detector classified it."
    )
    image: str | None = Field(
        None,
        max_length=PLATE_IMAGE_MAX_BASE64,
        pattern=BASE64,
        description="Since revision 3; only when pictures were asked for (the worker's --plate-images "
        "or the camera's setting), else absent (never null). The plate warped flat from its corners, "
        f"as a base64 JPEG of at most {PLATE_IMAGE_MAX_BYTES} bytes: the plate's aspect, at most 64 "
        "pixels high and 4 times its size in the decoded frame (frames over 1 MP are decoded at 1/2 "
        "scale or less).",
    )
    zone: str | None = Field(
        None,
        max_length=MAX_NAME_LENGTH,
        description="Since revision 3; only for cameras with zones (`stream-worker cameras set`), else "
        "absent (never null). The name of the first of the camera's zones that holds the plate box's "
        "centre; absent when none does.",
    )
    recognizer: str | None = Field(
        None,
        description="Since revision 5; only for cameras with a region other than `ru` (`stream-worker "
        "cameras set --region`), else absent (never null): the recognizer whose reading `text` is, "
        "`lprnet` (Russian plates) or `global` (Latin-script plates of many countries), read through "
        "the region's plate formats.",
    )
    country: str | None = Field(
        None,
        description="Since revision 5, with `recognizer`: the country of the region's format that `text` "
        "matches (`us`, `ar`, `ru`...); absent when it matches none (`format_valid` false).",
        examples=["us"],
    )
    plate_format: str | None = Field(
        None,
        description="Since revision 5, with `country`: the name of the format `text` matches, as the "
        "plate formats file names it.",
    )


def event_revision(plates: Sequence[PlateReading], examined: bool | None = None) -> int:
    """The revision an event with these plates (and `examined`) says: 5 when a plate has a revision-5
    field, else 4 when it has a revision-4 field, else 3 when a plate has a revision-3 field, else 2."""
    if any(getattr(plate, name) is not None for plate in plates for name in REVISION_5_PLATE_FIELDS):
        return 5
    if examined is not None:
        return 4
    if any(getattr(plate, name) is not None for plate in plates for name in REVISION_3_PLATE_FIELDS):
        return 3
    return SCHEMA_REVISION


class ModelInfo(BaseModel):
    name: str
    version: str


class PlateEvent(OmitsAbsent):
    """One per processed frame on the output topic (key = camera id), JSON-encoded."""

    model_config = ConfigDict(title="PlateEvent")
    omitted_when_absent: ClassVar[frozenset[str]] = REVISION_4_EVENT_FIELDS

    schema_version: Literal[1] = SCHEMA_VERSION
    schema_revision: int = Field(
        1,
        ge=1,
        description="Compatible additions within schema_version 1; absent means 1. Revision 2 adds "
        "`corners`, `character_confidences` and `layout` to each plate. Revision 3 adds `image` (and "
        "`zone`) to each plate, left out when absent: an event whose plates have none of them says 2 "
        "and is exactly a revision-2 event. Revision 4 adds `examined` to the event, left out when "
        "absent in the same way. Revision 5 adds `recognizer`, `country` and `plate_format` to each plate "
        "of a camera with a region other than `ru`, left out when absent in the same way.",
    )
    event_id: str = Field(
        description="UUIDv5 of 'topic:partition:offset' of the input frame: the same frame always "
        "gets the same id, so consumers can drop the duplicates that at-least-once delivery allows."
    )
    camera_id: CameraId
    frame_id: str
    captured_at: datetime | None = Field(description="From the frame's header, in UTC; null when absent.")
    processed_at: datetime = Field(description="When the worker built this event, UTC.")
    source: Source
    image: ImageSize
    plates: list[PlateReading]
    model: ModelInfo
    latency_ms: float = Field(ge=0, description="From the worker receiving the frame to building this event.")
    examined: Literal[False] | None = Field(
        None,
        description="Since revision 4; only for frames the worker did not look at for plates, else "
        "absent (never true, never null): false when the camera's motion gating found nothing moving "
        "in the frame, so it was not sent to the recognizer and `plates` is empty for that reason, not "
        "because no plate is there. `image` is still the frame's size.",
    )

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))
