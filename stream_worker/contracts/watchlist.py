"""The watch-list contract: one `WatchEntry` per plate on the compacted topic `watchlist`.

Record key = the normalised plate (UTF-8), value = the entry as JSON; a tombstone (null value)
removes the plate. Compaction keeps the latest record per key, so the topic read from the start
is the whole watch list. Plates are compared the way the recognizers write them: uppercase Latin
letters and digits (a Russian plate's Cyrillic letters as their Latin look-alikes), no separators,
so `в 840 ск 197` and `B840CK197` are one key, and `AB-123-CD` and `ab 123 cd` another.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import ClassVar, Literal

import orjson
from pydantic import ConfigDict, Field, ValidationError, field_validator

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.cameras import MAX_OVERSTAY_S
from stream_worker.contracts.plate_formats import LPRNET, RECOGNIZER_ALPHABETS
from stream_worker.contracts.records import json_value, text_key

# The Russian recognizer's alphabet (LPRNet's classes without the CTC blank).
PLATE_ALPHABET = RECOGNIZER_ALPHABETS[LPRNET]
# What a watch-list plate may hold: what any recognizer writes (the Latin one reads A-Z, digits),
# 2 to 9 characters (a US personalized plate may be 2; the recognizers read 9 at most).
LATIN_PLATE_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MIN_PLATE_LENGTH, MAX_PLATE_LENGTH = 2, 9
PLATE_PATTERN = rf"^[0-9A-Z]{{{MIN_PLATE_LENGTH},{MAX_PLATE_LENGTH}}}$"
LIST_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$"
MAX_LIST_LENGTH = 64
MAX_LABEL_LENGTH = 200

# The uppercase Cyrillic letters A VE IE KA EM EN O ER ES TE U HA, which look like ABEKMHOPCTYX.
CYRILLIC_LOOKALIKES = "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425"
_TO_LATIN = str.maketrans(CYRILLIC_LOOKALIKES, "ABEKMHOPCTYX")
# Whitespace, hyphen, the Unicode dashes, and the dots some plates print (full stop, middle dot, bullet).
_SEPARATORS = re.compile(r"[\s\-\u2010-\u2015.\u00b7\u2022]+")
_PLATE_RE = re.compile(PLATE_PATTERN)


class WatchRecordError(ValueError):
    """A watch-list record (key or value) that cannot be decoded into an entry or a removal."""


def normalise_plate(text: str) -> str:
    """The plate as the recognizers would write it: uppercase, Cyrillic look-alikes to Latin,
    spaces, dashes and dots removed. No validation (see `validate_plate`)."""
    return _SEPARATORS.sub("", text).upper().translate(_TO_LATIN)


def plate_problem(plate: str) -> str | None:
    """Why a normalised plate is not a valid key, or None when it is."""
    if _PLATE_RE.fullmatch(plate):
        return None
    foreign = sorted({char for char in plate if char not in LATIN_PLATE_ALPHABET})
    if foreign:
        shown = " ".join(repr(char) for char in foreign)
        return f"{plate!r} has characters no recognizer reads: {shown} (allowed: A-Z, 0-9)"
    return f"{plate!r} has {len(plate)} characters, not {MIN_PLATE_LENGTH} to {MAX_PLATE_LENGTH}"


def validate_plate(text: str) -> str:
    """The normalised plate; ValueError when it is not 2-9 Latin letters and digits."""
    plate = normalise_plate(text)
    problem = plate_problem(plate)
    if problem is not None:
        raise ValueError(problem)
    return plate


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class WatchKind(StrEnum):
    """What being on a list means: `watch` alerts (the alerts service), `allow` is a known vehicle
    (the notify service's "unknown vehicle" rule: a plate on no allow list)."""

    WATCH = "watch"
    ALLOW = "allow"


class WatchEntry(OmitsAbsent):
    """One plate on a watch list (value of a `watchlist` record; key = `plate`), JSON-encoded."""

    model_config = ConfigDict(title="WatchEntry", extra="forbid")
    omitted_when_absent: ClassVar[frozenset[str]] = frozenset({"kind", "overstay_s"})

    schema_version: Literal[1] = 1
    plate: str = Field(
        pattern=PLATE_PATTERN,
        description="The plate as the recognizers write it: 2-9 uppercase Latin letters and digits (a "
        "Russian plate's Cyrillic letters as their Latin look-alikes ABEKMHOPCTYX), no spaces, dashes "
        "or dots; also the record key. Python callers may pass any spelling (Cyrillic, lowercase, "
        "spaces, dashes, dots): it is normalised first.",
        examples=["B840CK197", "AB123CD"],
    )
    list: str = Field(
        pattern=LIST_PATTERN,
        max_length=MAX_LIST_LENGTH,
        description="The watch list the plate is on: a lowercase slug (letters, digits, '-' or '_' "
        "between them).",
        examples=["stolen", "residents"],
    )
    label: str | None = Field(
        None, max_length=MAX_LABEL_LENGTH, description="Free text for whoever reads the alert."
    )
    max_distance: float | None = Field(
        None,
        ge=0,
        description="Largest weighted edit distance from a read that still matches this entry; null: the "
        "alerts service's default. 0 means exact reads only.",
    )
    expires_at: datetime | None = Field(
        None, description="UTC; the entry no longer matches from then on. Null: never expires."
    )
    added_at: datetime = Field(description="When the entry was written, UTC.")
    kind: WatchKind | None = Field(
        None,
        description="allow: a known vehicle, never alerted (the notify service's allow lists); absent: "
        "watch, alerted.",
    )
    overstay_s: float | None = Field(
        None,
        ge=0,
        le=MAX_OVERSTAY_S,
        allow_inf_nan=False,
        description="The visits service's limit for this plate: its visit raises an overstay event once "
        "it lasts longer than this, whatever its site's limit; 0: its visits never overstay; absent: "
        "its list's limit (visits --list-overstay-s), else its site's.",
    )

    @field_validator("plate", mode="before")
    @classmethod
    def _normalise_plate(cls, value: object) -> object:
        return normalise_plate(value) if isinstance(value, str) else value

    @field_validator("expires_at", "added_at")
    @classmethod
    def _to_utc(cls, value: datetime | None) -> datetime | None:
        # Naive datetimes are taken as UTC, like the frames' captured_at header.
        return _utc(value)

    @property
    def effective_kind(self) -> WatchKind:
        return self.kind or WatchKind.WATCH

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


def error_summary(error: ValidationError) -> str:
    """A pydantic error as one line per problem, `field: message`, for people and logs."""
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "value"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def encode_entry(entry: WatchEntry) -> tuple[bytes, bytes]:
    """The record (key, value) that puts `entry` on the watch list."""
    return entry.plate.encode(), entry.to_json()


def encode_removal(plate: str) -> tuple[bytes, None]:
    """The tombstone (key, None) that takes `plate` (any spelling) off the watch list."""
    return validate_plate(plate).encode(), None


def decode_key(key: bytes | None) -> str:
    """The plate a record is about; WatchRecordError unless the key is a normalised plate."""
    plate = text_key(key, "the normalised plate", WatchRecordError)
    problem = plate_problem(plate)
    if problem is not None:
        normalised = normalise_plate(plate)
        hint = f" (normalised it would be {normalised!r})" if normalised != plate else ""
        raise WatchRecordError(f"key is not a normalised plate: {problem}{hint}")
    return plate


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, WatchEntry | None]:
    """(plate, entry) of a record; the entry is None for a tombstone. WatchRecordError says why a
    record is unusable: a bad key, a value that is not JSON or not a valid entry, a value whose
    plate is not its key."""
    plate = decode_key(key)
    if value is None:
        return plate, None
    data = json_value(value, f"value of {plate} is not JSON", WatchRecordError)
    if not isinstance(data, dict):
        raise WatchRecordError(f"value of {plate} is not a JSON object")
    try:
        entry = WatchEntry.model_validate(data)
    except ValidationError as error:
        raise WatchRecordError(
            f"value of {plate} is not a valid WatchEntry: {error_summary(error)}"
        ) from error
    if entry.plate != plate:
        raise WatchRecordError(f"value's plate {entry.plate!r} differs from the key {plate!r}")
    return plate, entry


def new_entry(
    plate: str,
    list_name: str,
    label: str | None = None,
    max_distance: float | str | None = None,
    expires_at: datetime | str | None = None,
    now: datetime | None = None,
    kind: WatchKind = WatchKind.WATCH,
    overstay_s: float | str | None = None,
) -> WatchEntry:
    """An entry from what a person typed (the CLI, a CSV row), added `now`; ValueError with one
    readable reason per problem. Blank optional values are absent; an expiry already past is an
    error, since such an entry would never match."""
    now = _utc(now) or datetime.now(UTC)
    problems = []
    try:
        plate = validate_plate(plate)
    except ValueError as error:
        problems.append(f"plate {error}")
    list_name = list_name.strip()
    if not re.fullmatch(LIST_PATTERN, list_name) or len(list_name) > MAX_LIST_LENGTH:
        problems.append(
            f"list {list_name!r} is not a lowercase slug of at most {MAX_LIST_LENGTH} characters "
            "(letters, digits, '-' or '_' between them)"
        )
    label = (label or "").strip() or None
    if label is not None and len(label) > MAX_LABEL_LENGTH:
        problems.append(f"label has {len(label)} characters, more than {MAX_LABEL_LENGTH}")
    distance = _distance(max_distance, problems)
    limit = _overstay(overstay_s, problems)
    expiry = _expiry(expires_at, now, problems)
    if problems:
        raise ValueError("; ".join(problems))
    try:
        return WatchEntry(
            plate=plate,
            list=list_name,
            label=label,
            max_distance=distance,
            expires_at=expiry,
            added_at=now,
            kind=None if kind is WatchKind.WATCH else kind,
            overstay_s=limit,
        )
    except ValidationError as error:
        raise ValueError(error_summary(error)) from error


def _distance(value: float | str | None, problems: list[str]) -> float | None:
    return _optional_number("max_distance", value, sys.float_info.max, "a finite number >= 0", problems)


def _overstay(value: float | str | None, problems: list[str]) -> float | None:
    meaning = f"a number of seconds from 0 to {MAX_OVERSTAY_S:.0f}"
    return _optional_number("overstay_s", value, MAX_OVERSTAY_S, meaning, problems)


def _optional_number(
    name: str, value: float | str | None, largest: float, meaning: str, problems: list[str]
) -> float | None:
    """A column's number from 0 to `largest` as typed (a blank: None); what is wrong with it added
    to `problems` (None then)."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = float(value)
        except ValueError:
            problems.append(f"{name} {value!r} is not a number")
            return None
    if value is not None and not 0 <= value <= largest:
        problems.append(f"{name} {value!r} is not {meaning}")
        return None
    return value


def _expiry(value: datetime | str | None, now: datetime, problems: list[str]) -> datetime | None:
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            problems.append(f"expires_at {value!r} is not an ISO-8601 date or date-time")
            return None
    expiry = _utc(value)
    if expiry is not None and expiry <= now:
        problems.append(f"expires_at {expiry.isoformat()} is already past")
    return expiry
