"""The visits service's output: `PlateVisit` events on the `visits` topic (key = the site's name), so
that a site's events stay in order on one partition."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import ClassVar, Literal

import orjson
from pydantic import ConfigDict, Field

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.cameras import MAX_NAME_LENGTH, SITE_NAME
from stream_worker.contracts.events import MAX_PLATE_TEXT_LENGTH
from stream_worker.contracts.ids import CameraId, Uuid
from stream_worker.contracts.watchlist import MAX_LIST_LENGTH

# The namespace of visit and visit-event ids: uuid5 of it and the site's name and the entry
# sighting's id, so that a visit decided again after a restart carries the same ids.
VISITS_NAMESPACE = uuid.UUID("5c7d0c1e-4a8e-5a39-9d0c-3e0b1f6a7c21")


class VisitEventKind(StrEnum):
    OPENED = "opened"  # an entry camera's sighting: the vehicle is on site
    CLOSED = "closed"  # the visit ended (`ended_by` says how)
    OVERSTAY = "overstay"  # the visit has lasted longer than its limit (once per visit)


class VisitEnd(StrEnum):
    EXIT = "exit"  # an exit camera saw the plate
    REENTRY = "reentry"  # an entry camera saw it again first: no exit seen


class PlateVisit(OmitsAbsent):
    """One event of a vehicle's visit to a site, JSON-encoded."""

    model_config = ConfigDict(title="PlateVisit")
    omitted_when_absent: ClassVar[frozenset[str]] = frozenset(
        {"exit_camera_id", "exit_sighting_id", "exit_text", "exited_at", "ended_by", "overstay_s", "list"}
    )

    schema_version: Literal[1] = 1
    event_id: Uuid = Field(description="UUIDv5 of the visit id and the event kind: one id per event.")
    event: VisitEventKind
    visit_id: Uuid = Field(description="UUIDv5 of the site and the entry sighting's id.")
    site: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, pattern=SITE_NAME)
    plate: str = Field(max_length=MAX_PLATE_TEXT_LENGTH, description="The entry sighting's voted text.")
    entry_camera_id: CameraId
    entry_sighting_id: Uuid
    entered_at: datetime = Field(description="The entry sighting's first capture time.")
    at: datetime = Field(
        description="When the event happened, in capture time: entered_at (opened), exited_at or the "
        "re-entry's capture time (closed), entered_at + overstay_s (overstay)."
    )
    dwell_s: float = Field(ge=0, description="Seconds on site at `at`.")
    exit_camera_id: CameraId | None = Field(None, description="closed by an exit: the exit camera.")
    exit_sighting_id: Uuid | None = Field(
        None, description="closed: the sighting that ended the visit (the exit's, or the re-entry's)."
    )
    exit_text: str | None = Field(
        None, max_length=MAX_PLATE_TEXT_LENGTH, description="closed by an exit: its voted text."
    )
    exited_at: datetime | None = Field(None, description="closed by an exit: its first capture time.")
    ended_by: VisitEnd | None = Field(None, description="closed: exit, or reentry (no exit seen).")
    overstay_s: float | None = Field(
        None, gt=0, description="opened and overstay: the visit's limit (absent: none)."
    )
    list: str | None = Field(
        None,
        max_length=MAX_LIST_LENGTH,
        description="opened and overstay: the watch list whose entry set the limit (the plate's own "
        "overstay_s, or its list's limit); absent: the limit is the site's or the default.",
    )

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


def visit_id(site: str, entry_sighting_id: str) -> str:
    return str(uuid.uuid5(VISITS_NAMESPACE, f"{site}/{entry_sighting_id}"))


def visit_event_id(visit: str, kind: VisitEventKind) -> str:
    return str(uuid.uuid5(VISITS_NAMESPACE, f"{visit}/{kind.value}"))
