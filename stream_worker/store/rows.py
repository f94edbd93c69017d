"""What the history store's reads return (search.py, queries.py): plain pydantic models that the
CLI prints, the console renders and the HTTP API serialises as they are.

Times are UTC and timezone-aware whatever the database (SQLite gives naive values back: `utc` marks
them). The JSON columns (`candidates`, `record`) come back as the writer stored them.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel, Field


def utc(value: datetime | None) -> datetime | None:
    """`value` as an aware UTC datetime (naive values are UTC: that is how the store writes them)."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SightingRow(BaseModel):
    """One stored sighting, as a search result or a live-feed item lists it."""

    seq: int = Field(description="The store's own order: later rows have larger numbers.")
    sighting_id: str
    camera_id: str
    text: str
    distance: float | None = Field(
        None,
        description="Weighted edit distance from the searched text of `text` or, nearer, of "
        "`corrected_text` (search results only).",
    )
    corrected_text: str | None = Field(
        None, description="The text an operator corrected the read to (search results only); else null."
    )
    format_valid: bool | None
    confidence: float | None
    reads: int | None
    direction: str | None
    zone: str | None
    first_seen: datetime
    last_seen: datetime
    has_picture: bool


class SightingDetail(SightingRow):
    """A sighting with everything kept of it: the vote's candidates and the whole PlateSighting
    (`record`, without the picture, which `queries.picture` returns)."""

    closed_at: datetime | None
    stored_at: datetime | None
    candidates: list[dict[str, Any]]
    record: dict[str, Any]


class CameraSeen(BaseModel):
    """A camera that has stored sightings, and when the latest of them was last seen."""

    camera_id: str
    last_seen: datetime


class AlertRow(BaseModel):
    """One stored alert, with its acknowledgement."""

    seq: int
    alert_id: str
    sighting_id: str | None
    camera_id: str
    list: str
    label: str | None
    plate: str = Field(description="The watch-list entry's plate.")
    candidate: str = Field(description="The text read that matched it.")
    match_kind: str
    distance: float
    confidence: float | None
    origin: str | None
    captured_at: datetime | None
    alerted_at: datetime
    acknowledged_at: datetime | None
    acknowledged_by: str | None
    corrected_text: str | None = Field(
        None,
        description="Set when an operator corrected the alert's sighting to this text, which the "
        "alert's entry no longer matches: the alert was raised by a misread.",
    )
    corrected_at: datetime | None = None


class VisitRow(BaseModel):
    """One stored visit: open (`closed_at` null: on site) or closed, with its dwell time."""

    seq: int = Field(description="The store's own order: later rows have larger numbers.")
    visit_id: str
    site: str
    plate: str = Field(description="The entry sighting's text.")
    distance: float | None = Field(
        None,
        description="Weighted edit distance from the searched text of `plate` or, nearer, of "
        "`exit_text` (search results only).",
    )
    entry_camera_id: str
    entry_sighting_id: str
    entered_at: datetime
    overstay_s: float | None = Field(None, description="The visit's limit, if it has one.")
    overstayed_at: datetime | None = Field(None, description="When it passed its limit, if it did.")
    closed_at: datetime | None = Field(None, description="When it ended; null: on site.")
    ended_by: str | None = Field(None, description="exit, or reentry (an entry seen again, no exit).")
    dwell_s: float | None = Field(None, description="Seconds on site, once closed.")
    exit_camera_id: str | None = None
    exit_sighting_id: str | None = None
    exit_text: str | None = None
    exited_at: datetime | None = None

    @property
    def on_site(self) -> bool:
        return self.closed_at is None

    def dwell_at(self, now: datetime) -> float:
        """Seconds on site: the final dwell once closed, else so far at `now`."""
        if self.dwell_s is not None:
            return self.dwell_s
        return max((now - self.entered_at).total_seconds(), 0.0)


def duration(seconds: float | None) -> str:
    """A dwell time for people: `42 s`, `7 min 05 s`, `2 h 03 min`, `3 d 04 h`."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours:02d} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


class AuditRow(BaseModel):
    """One change made through the console, the API or `store forget`: who, when, what."""

    seq: int
    at: datetime
    user: str
    action: str
    detail: dict[str, Any] | list[Any] | str | int | float | bool | None


T = TypeVar("T")
MAX_SEQ = 2**63 - 1  # the largest row number a 64-bit column holds


class Page(BaseModel, Generic[T]):
    """One page of newest-first rows; pass `next_cursor` back for the next page (None: the last)."""

    items: list[T]
    next_cursor: str | None = None


def encode_cursor(at: datetime, seq: int) -> str:
    """An opaque keyset position: the last row's time and seq, URL-safe."""
    stamp = utc(at)
    assert stamp is not None
    payload = orjson.dumps([stamp.isoformat(), seq])
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The position `encode_cursor` made; ValueError for anything else."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, seq = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        at = datetime.fromisoformat(stamp)
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
            raise ValueError("no row number this store makes")
        if at.tzinfo is None:
            raise ValueError("no time zone")
        return at.astimezone(UTC), seq  # OverflowError near year 1 or 9999 with an offset
    except (ValueError, TypeError, UnicodeError, OverflowError, orjson.JSONDecodeError) as error:
        raise ValueError("not a cursor this store made") from error
