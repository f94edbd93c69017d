"""The alerts service's output: one `PlateAlert` per camera, watch-list entry and vehicle pass."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import ClassVar, Literal

import orjson
from pydantic import ConfigDict, Field

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.cameras import MAX_NAME_LENGTH
from stream_worker.contracts.events import MAX_PLATE_TEXT_LENGTH, SCHEMA_VERSION, Box, Source
from stream_worker.contracts.ids import CameraId, Uuid
from stream_worker.contracts.sightings import READ_AS_FIELDS, Direction
from stream_worker.contracts.watchlist import MAX_LABEL_LENGTH, MAX_LIST_LENGTH


# How a read matched a watch-list entry (no docstring: it would change plate_alert.schema.json).
class MatchKind(StrEnum):
    EXACT = "exact"
    FUZZY = "fuzzy"


class AlertOrigin(StrEnum):
    """What raised an alert."""

    READ = "read"  # a read (PlateEvent) of the pass matched: the pass's first matching read
    SIGHTING = "sighting"  # no read did, the voted sighting's text or a top candidate did, later
    CORRECTION = "correction"  # an operator corrected the sighting's text to one the entry matches


class PlateAlert(OmitsAbsent):
    """One per (camera, watch-list entry, vehicle pass) on the alerts topic (key = camera id),
    JSON-encoded: raised on the pass's first read that matched the entry (origin `read`), or, for a
    pass whose reads raised none for the entry, on its voted sighting (origin `sighting`)."""

    model_config = ConfigDict(title="PlateAlert")
    # as in sightings; the zone and direction (notify's rules ask for them)
    omitted_when_absent: ClassVar[frozenset[str]] = READ_AS_FIELDS | {"zone", "direction", "corrected_from"}

    schema_version: Literal[1] = SCHEMA_VERSION
    alert_id: Uuid = Field(
        description="UUIDv5 of the camera id, the entry's plate and list, and (origin read) the "
        "plates-topic position of the pass's first matching read or (origin sighting) the sighting_id: "
        "an alert published again after a restart carries the same id."
    )
    origin: AlertOrigin = Field(
        AlertOrigin.READ,
        description="read: raised on a read of the pass; sighting: raised on the pass's voted sighting "
        "because no read alerted it (a later follow-up, at most one per sighting and entry); "
        "correction: raised when an operator corrected the sighting's text to one the entry matches and "
        "the text as read did not (at most one per sighting and entry). Absent in alerts from before "
        "this field: read.",
    )
    sighting_id: Uuid | None = Field(
        None,
        description="origin sighting or correction: the PlateSighting the alert comes from; else null.",
    )
    candidate_rank: int | None = Field(
        None,
        ge=0,
        description="origin sighting: the rank among the sighting's candidates of the text that matched "
        "(0: the best); else null.",
    )
    list: str = Field(max_length=MAX_LIST_LENGTH, description="The watch list of the entry matched.")
    label: str | None = Field(max_length=MAX_LABEL_LENGTH, description="The entry's label.")
    plate: str = Field(max_length=MAX_PLATE_TEXT_LENGTH, description="The entry's plate (normalised).")
    match_kind: MatchKind = Field(description="exact: the read is the plate; fuzzy: within max_distance.")
    distance: float = Field(ge=0, description="Weighted edit distance of the read from the entry's plate.")
    candidate: str = Field(
        max_length=MAX_PLATE_TEXT_LENGTH,
        description="The read text (origin sighting: the sighting's candidate text; origin correction: "
        "the corrected text) that matched, normalised.",
    )
    confidence: float = Field(
        description="The read's recogniser confidence in [0, 1] (origin sighting: the matched "
        "candidate's vote score; origin correction: 1, an operator read it)."
    )
    camera_id: CameraId
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
    recognizer: str | None = Field(
        None,
        description="The read's (origin sighting: the sighting's) `recognizer`, `country` and "
        "`plate_format` when it has them (cameras with a region other than `ru`); else absent.",
    )
    country: str | None = Field(None, description="See `recognizer`.", examples=["us"])
    plate_format: str | None = Field(None, description="See `recognizer`.")
    zone: str | None = Field(
        None,
        max_length=MAX_NAME_LENGTH,
        description="The read's zone (origin sighting: the sighting's best read's) when it has one (a "
        "camera with zones); else absent (never null).",
    )
    direction: Direction | None = Field(
        None,
        description="Origin sighting: the sighting's direction of travel when it has one; else absent "
        "(never null): a read alert is raised at the pass's first matching read, before its direction "
        "is known.",
    )
    corrected_from: str | None = Field(
        None,
        max_length=MAX_PLATE_TEXT_LENGTH,
        description="Origin correction: the sighting's text as read, which the operator corrected to "
        "`candidate`; else absent (never null).",
    )

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))
