"""The message contracts: input frame headers, output `PlateEvent`, dead-letter headers, `PlateSighting`,
the watch list's `WatchEntry` (defined with its plate normalisation in stream_worker/alerts/) and
`PlateAlert`.

The pydantic models are the single source of truth; `schemas/*.schema.json` are generated from
them (`python -m stream_worker.contracts` or `stream-worker schemas export`) so that consumers in
other languages can validate messages, and a test fails when the checked-in files are stale.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from stream_worker.alerts.matching import MatchKind
from stream_worker.alerts.watchlist import WatchEntry
from stream_worker.cameras.settings import CameraSettings

# schema_version: the major version, incremented only by a breaking change. schema_revision:
# incremented by each compatible addition (new optional fields), so a consumer can tell which
# fields to expect; events without it are revision 1.
SCHEMA_VERSION = 1
SCHEMA_REVISION = 2  # what an event without any revision-3 field says (byte-for-byte as before)
# Revision 3's optional fields of each plate: left out of the JSON when absent, and an event says
# revision 3 only when one of its plates has one (`event_revision`), so that events without them stay
# byte-for-byte revision-2 events. Each revision-3 plate field belongs here.
REVISION_3_PLATE_FIELDS = frozenset({"image", "zone"})
# A plate's picture: a JPEG of at most this many bytes (the BLS's pictures.PICTURE_MAX_BYTES, tested).
PLATE_IMAGE_MAX_BYTES = 16 * 1024
PLATE_IMAGE_MAX_BASE64 = 4 * -(-PLATE_IMAGE_MAX_BYTES // 3)  # its base64 text's length at most
BASE64 = r"^[A-Za-z0-9+/]*={0,2}$"
SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "schemas"

# Russian civil plates: letter, three digits, two letters, two- or three-digit region, using
# only the twelve Cyrillic letters that look like Latin ones (written here in Latin).
PLATE_FORMAT = r"^[ABEKMHOPCTYX]\d{3}[ABEKMHOPCTYX]{2}\d{2,3}$"


class FrameHeader(StrEnum):
    """Kafka headers a camera may set on an input frame (all optional, UTF-8 values)."""

    CAMERA_ID = "camera_id"  # falls back to the record key
    FRAME_ID = "frame_id"  # falls back to "topic:partition:offset"
    CAPTURED_AT = "captured_at"  # ISO-8601 or epoch milliseconds


class DeadLetterHeader(StrEnum):
    """Headers the worker adds to a dead-lettered frame (next to the frame's own headers)."""

    STAGE = "error.stage"
    REASON = "error.reason"
    DETAIL = "error.detail"
    SOURCE_TOPIC = "source.topic"
    SOURCE_PARTITION = "source.partition"
    SOURCE_OFFSET = "source.offset"
    # Only when the broker refused the record with the frame in it (too large): the frame's size.
    VALUE_OMITTED = "error.value_omitted"


class ErrorStage(StrEnum):
    """Where in the pipeline a frame was rejected."""

    VALIDATE = "validate"  # before inference: headers, size
    DECODE = "decode"  # Triton could not decode the image
    INFERENCE = "inference"  # Triton failed on this frame alone, every attempt


class ErrorReason(StrEnum):
    """Why a frame was rejected: a short, fixed vocabulary (it labels the DLQ metric)."""

    EMPTY_FRAME = "empty_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    MISSING_CAMERA_ID = "missing_camera_id"
    INVALID_HEADER = "invalid_header"
    INVALID_IMAGE = "invalid_image"
    INFERENCE_FAILED = "inference_failed"


class FrameHeaders(BaseModel):
    """Input record headers (value = the JPEG bytes, key = the camera id)."""

    model_config = ConfigDict(title="FrameHeaders", extra="allow")

    camera_id: str | None = Field(None, description="Camera id; the record key when absent.")
    frame_id: str | None = Field(None, description="Frame id; 'topic:partition:offset' when absent.")
    captured_at: str | None = Field(
        None,
        description="When the camera took the frame: ISO-8601 (naive means UTC) or epoch milliseconds.",
        examples=["2025-01-31T12:00:00.250Z", "1738324800250"],
    )


class DeadLetterHeaders(BaseModel):
    """Headers added to a dead-letter record; key, value and the frame's own headers are kept."""

    model_config = ConfigDict(title="DeadLetterHeaders", populate_by_name=True)

    error_stage: ErrorStage = Field(alias=DeadLetterHeader.STAGE.value)
    error_reason: ErrorReason = Field(alias=DeadLetterHeader.REASON.value)
    error_detail: str = Field(alias=DeadLetterHeader.DETAIL.value, description="Human-readable detail.")
    source_topic: str = Field(alias=DeadLetterHeader.SOURCE_TOPIC.value)
    source_partition: str = Field(
        alias=DeadLetterHeader.SOURCE_PARTITION.value, pattern=r"^\d+$", description="Decimal."
    )
    source_offset: str = Field(
        alias=DeadLetterHeader.SOURCE_OFFSET.value, pattern=r"^\d+$", description="Decimal."
    )
    value_omitted: str | None = Field(
        None,
        alias=DeadLetterHeader.VALUE_OMITTED.value,
        pattern=r"^\d+$",
        description="Present only when the record was too large for the broker with the frame in it: "
        "the value is then empty and this is the frame's size in bytes.",
    )


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


class OmitsAbsent(BaseModel):
    """A model whose `omitted_when_absent` fields (compatible additions) are left out of its JSON when
    None, so that a message without them is byte-for-byte what the previous revision wrote and a
    consumer of that revision sees no new key."""

    omitted_when_absent: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.omitted_when_absent:
                if name in data and data[name] is None:
                    del data[name]
        return data


class PlateReading(OmitsAbsent):
    omitted_when_absent: ClassVar[frozenset[str]] = REVISION_3_PLATE_FIELDS

    text: str = Field(description="Recognised characters (Latin look-alikes of the Cyrillic letters).")
    confidence: float = Field(
        description="Recogniser confidence in [0, 1]: the least sure character's, rounded to 4 decimals."
    )
    box: Box
    detection_score: float = Field(
        description="The detector's score for the plate in [0, 1] (objectness x layout probability for "
        "the learned detector), rounded to 4 decimals."
    )
    format_valid: bool = Field(
        description=f"Whether `text` matches the Russian plate pattern {PLATE_FORMAT}."
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
        description="Since revision 3; only for cameras with zones (`stream-worker cameras set`), else "
        "absent (never null). The name of the first of the camera's zones that holds the plate box's "
        "centre; absent when none does.",
    )


def event_revision(plates: Sequence[PlateReading]) -> int:
    """The revision an event with these plates says: 3 when a plate has a revision-3 field, else 2."""
    if any(getattr(plate, name) is not None for plate in plates for name in REVISION_3_PLATE_FIELDS):
        return 3
    return SCHEMA_REVISION


class ModelInfo(BaseModel):
    name: str
    version: str


class PlateEvent(BaseModel):
    """One per processed frame on the output topic (key = camera id), JSON-encoded."""

    model_config = ConfigDict(title="PlateEvent")

    schema_version: Literal[1] = SCHEMA_VERSION
    schema_revision: int = Field(
        1,
        ge=1,
        description="Compatible additions within schema_version 1; absent means 1. Revision 2 adds "
        "`corners`, `character_confidences` and `layout` to each plate. Revision 3 adds `image` (and "
        "`zone`) to each plate, left out when absent: an event whose plates have none of them says 2 "
        "and is exactly a revision-2 event.",
    )
    event_id: str = Field(
        description="UUIDv5 of 'topic:partition:offset' of the input frame: the same frame always "
        "gets the same id, so consumers can drop the duplicates that at-least-once delivery allows."
    )
    camera_id: str
    frame_id: str
    captured_at: datetime | None = Field(description="From the frame's header, in UTC; null when absent.")
    processed_at: datetime = Field(description="When the worker built this event, UTC.")
    source: Source
    image: ImageSize
    plates: list[PlateReading]
    model: ModelInfo
    latency_ms: float = Field(ge=0, description="From the worker receiving the frame to building this event.")

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


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
    text: str
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
    text: str
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
        None, description="The read's zone (its PlateReading's `zone`) when it has one; absent otherwise."
    )


class SightingSource(BaseModel):
    """Where the sighting's reads are: PlateEvents of one partition of the plates topic."""

    topic: str
    partition: int = Field(ge=0)
    first_offset: int = Field(ge=0)
    last_offset: int = Field(ge=0)


class PlateSighting(BaseModel):
    """One per vehicle pass on the sightings topic (key = camera id), JSON-encoded: the plate's reads
    over consecutive frames of one camera, voted into one text."""

    model_config = ConfigDict(title="PlateSighting")

    schema_version: Literal[1] = SCHEMA_VERSION
    sighting_id: str = Field(
        description="UUIDv5 of the camera id and the plates-topic position of the group's first read: "
        "a sighting published again after a restart carries the same id."
    )
    camera_id: str
    text: str = Field(description="The voted text (Latin look-alikes of the Cyrillic letters).")
    confidence: float = Field(
        description="Support of the voted text's least supported character in [0, 1]: the summed "
        "confidences of the reads that agree on it over the number of reads."
    )
    format_valid: bool = Field(description=f"Whether `text` matches {PLATE_FORMAT}.")
    candidates: list[SightingCandidate] = Field(description="The best texts, best first.")
    reads: int = Field(ge=1, description="Frames in which the plate was read.")
    first_seen: datetime = Field(description="Capture time of the first read (processing time without one).")
    last_seen: datetime
    direction: Direction | None = Field(description="null when all reads share one capture time.")
    best_read: BestRead
    closed_by: ClosedBy
    closed_at: datetime = Field(description="When the service closed the group, UTC (wall clock).")
    source: SightingSource

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


class AlertOrigin(StrEnum):
    """What raised an alert."""

    READ = "read"  # a read (PlateEvent) of the pass matched: the pass's first matching read
    SIGHTING = "sighting"  # no read did, the voted sighting's text or a top candidate did, later


class PlateAlert(BaseModel):
    """One per (camera, watch-list entry, vehicle pass) on the alerts topic (key = camera id),
    JSON-encoded: raised on the pass's first read that matched the entry (origin `read`), or, for a
    pass whose reads raised none for the entry, on its voted sighting (origin `sighting`)."""

    model_config = ConfigDict(title="PlateAlert")

    schema_version: Literal[1] = SCHEMA_VERSION
    alert_id: str = Field(
        description="UUIDv5 of the camera id, the entry's plate and list, and (origin read) the "
        "plates-topic position of the pass's first matching read or (origin sighting) the sighting_id: "
        "an alert published again after a restart carries the same id."
    )
    origin: AlertOrigin = Field(
        AlertOrigin.READ,
        description="read: raised on a read of the pass; sighting: raised on the pass's voted sighting "
        "because no read alerted it (a later follow-up, at most one per sighting and entry). Absent in "
        "alerts from before this field: read.",
    )
    sighting_id: str | None = Field(
        None, description="origin sighting: the PlateSighting the alert comes from; else null."
    )
    candidate_rank: int | None = Field(
        None,
        ge=0,
        description="origin sighting: the rank among the sighting's candidates of the text that matched "
        "(0: the best); else null.",
    )
    list: str = Field(description="The watch list of the entry matched.")
    label: str | None = Field(description="The entry's label.")
    plate: str = Field(description="The entry's plate (normalised).")
    match_kind: MatchKind = Field(description="exact: the read is the plate; fuzzy: within max_distance.")
    distance: float = Field(ge=0, description="Weighted edit distance of the read from the entry's plate.")
    candidate: str = Field(
        description="The read text (origin sighting: the sighting's candidate text) that matched, normalised."
    )
    confidence: float = Field(
        description="The read's recogniser confidence in [0, 1] (origin sighting: the matched "
        "candidate's vote score)."
    )
    camera_id: str
    frame_id: str = Field(description="The read's frame (origin sighting: the sighting's best read's).")
    event_id: str = Field(description="The PlateEvent the read (origin sighting: the best read) comes from.")
    captured_at: datetime | None = Field(description="The frame's capture time, UTC; null when absent.")
    box: Box
    source: Source = Field(
        description="Where the read's PlateEvent is (the plates topic); origin sighting: the sighting's "
        "first read."
    )
    frame_source: Source = Field(description="Where the frame itself was read (the frames topic).")
    alerted_at: datetime = Field(description="When the service built the alert, UTC (wall clock).")

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "plate_event.schema.json": PlateEvent,
    "plate_sighting.schema.json": PlateSighting,
    "frame_headers.schema.json": FrameHeaders,
    "dead_letter_headers.schema.json": DeadLetterHeaders,
    "watch_entry.schema.json": WatchEntry,
    "plate_alert.schema.json": PlateAlert,
    "camera_settings.schema.json": CameraSettings,
}


def render_schemas() -> dict[str, bytes]:
    """The JSON Schema files, by file name, exactly as they are checked in."""
    rendered = {}
    for file_name, model in SCHEMA_MODELS.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
        rendered[file_name] = orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    return rendered


def export_schemas(directory: Path = SCHEMAS_DIR, check: bool = False) -> list[str]:
    """Write the schema files (or, with `check`, only list the stale ones); returns the stale names."""
    stale = []
    for file_name, content in render_schemas().items():
        path = directory / file_name
        if not path.exists() or path.read_bytes() != content:
            stale.append(file_name)
            if not check:
                directory.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
    return stale


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    names = export_schemas(check=check)
    if check and names:
        sys.exit(
            f"stale schema files in {SCHEMAS_DIR}: {', '.join(names)} (run python -m stream_worker.contracts)"
        )
    print(f"{'stale' if check else 'wrote'}: {', '.join(names) or 'nothing, all up to date'}")
