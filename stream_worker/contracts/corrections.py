"""The compacted `corrections` topic's `Correction`: an operator's review of a sighting's read.

Record key = the sighting id (UTF-8), value = the correction as JSON: the last review of a
sighting wins (compaction keeps it). `confirm` says the read was right (`new_text` = `old_text`);
`correct` gives the right text (and region/country when they were wrong too). The console writes
it with the sighting's best read and plates positions, so that a consumer needs no store to act on
it (the alerts service raises the corrected text's alert from them); the store keeps it beside the
sighting, and any consumer can follow it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stream_worker.contracts.events import MAX_PLATE_TEXT_LENGTH, SCHEMA_VERSION
from stream_worker.contracts.ids import UUID_PATTERN, CameraId, Uuid
from stream_worker.contracts.sightings import BestRead, SightingSource
from stream_worker.contracts.watchlist import error_summary, validate_plate

MAX_USER_LENGTH = 128
MAX_REGION_LENGTH = 32


class CorrectionKind(StrEnum):
    """What the operator said of the read."""

    CONFIRM = "confirm"  # the read is right
    CORRECT = "correct"  # the read is wrong: `new_text` is the plate


class CorrectionRecordError(ValueError):
    """A corrections record (key or value) that cannot be decoded."""


class Correction(BaseModel):
    """An operator's review of one sighting's read, on the compacted corrections topic (key =
    sighting id), JSON-encoded; the latest one per sighting counts."""

    model_config = ConfigDict(title="Correction", extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    sighting_id: Uuid = Field(description="The PlateSighting reviewed (the record's key).")
    camera_id: CameraId
    kind: CorrectionKind = Field(description="confirm: the read is right; correct: new_text is the plate.")
    old_text: str = Field(
        min_length=1, max_length=MAX_PLATE_TEXT_LENGTH, description="The sighting's text as read."
    )
    new_text: str = Field(
        min_length=2,
        max_length=MAX_PLATE_TEXT_LENGTH,
        description="The plate as the operator reads it, normalised (confirm: old_text).",
    )
    region: str | None = Field(
        None, max_length=MAX_REGION_LENGTH, description="The plate's region, when the operator set one."
    )
    country: str | None = Field(
        None, max_length=MAX_REGION_LENGTH, description="The plate's country, when the operator set one."
    )
    corrected_by: str = Field(min_length=1, max_length=MAX_USER_LENGTH, description="The console user.")
    corrected_at: datetime = Field(description="When the operator saved it, UTC.")
    best_read: BestRead | None = Field(
        None,
        description="The sighting's best read as stored, without its picture (frame, box, capture "
        "time); null when the store had no record of it.",
    )
    source: SightingSource | None = Field(
        None, description="Where the sighting's reads are on the plates topic; null as best_read."
    )

    @field_validator("new_text")
    @classmethod
    def _plate(cls, value: str) -> str:
        return validate_plate(value)

    @field_validator("corrected_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @field_validator("region", "country")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return (value.strip().lower() or None) if value is not None else None

    @model_validator(mode="after")
    def _kind_fits_the_texts(self) -> Correction:
        if self.kind is CorrectionKind.CONFIRM and self.new_text != self.old_text:
            raise ValueError("a confirmation keeps the text as read (new_text = old_text)")
        unchanged = self.new_text == self.old_text and self.region is None and self.country is None
        if self.kind is CorrectionKind.CORRECT and unchanged:
            raise ValueError("a correction changes the text, the region or the country")
        return self

    @property
    def changed(self) -> bool:
        """Whether the text differs from the read's."""
        return self.new_text != self.old_text

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


def encode_correction(correction: Correction) -> tuple[bytes, bytes]:
    return correction.sighting_id.encode(), correction.to_json()


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, Correction | None]:
    """(sighting id, correction or None for a tombstone); CorrectionRecordError says why not."""
    if key is None:
        raise CorrectionRecordError("record has no key (the key must be the sighting id)")
    sighting_id = key.decode("utf-8", "replace")
    if not re.fullmatch(UUID_PATTERN, sighting_id):
        raise CorrectionRecordError(f"key {sighting_id[:80]!r} is not a sighting id")
    if value is None:
        return sighting_id, None
    try:
        correction = Correction.model_validate(orjson.loads(value))
    except orjson.JSONDecodeError as error:
        raise CorrectionRecordError(f"value of {sighting_id} is not JSON: {error}") from error
    except ValidationError as error:
        raise CorrectionRecordError(
            f"value of {sighting_id} is not a valid Correction: {error_summary(error)}"
        ) from error
    if correction.sighting_id != sighting_id:
        raise CorrectionRecordError(f"value's sighting id differs from the key {sighting_id!r}")
    return sighting_id, correction
