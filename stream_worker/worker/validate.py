"""Input checks before inference: headers, key, size. A bad frame becomes a `Rejection` (-> DLQ).

Nothing here raises on input: whatever bytes arrive, the result is a `Frame` or a `Rejection`
that names the reason, so a bad frame can neither crash the worker nor vanish.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from stream_worker.contracts import ErrorReason, ErrorStage, FrameHeader
from stream_worker.contracts.ids import camera_id_problem

Headers = list[tuple[str, bytes | None]]
_EPOCH_MS = re.compile(r"^-?\d{1,16}$")
_SIZE = re.compile(r"^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$")


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One consumed Kafka record, as plain values (the worker's only view of a message)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    received_at: float  # time.monotonic() when consumed, for latency_ms
    produced_ms: int | None = None  # the record's timestamp (epoch ms), for the worker's lag

    @property
    def source_id(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}"


@dataclass(frozen=True, slots=True)
class Frame:
    """A record that passed validation, with its parsed headers."""

    record: InputRecord
    camera_id: str
    frame_id: str
    captured_at: datetime | None
    epoch: int  # the partition's assignment generation when consumed (stale results are dropped)
    static: tuple[int, int] | None = None  # a static marker's frame size (FrameHeader.STATIC): no image

    @property
    def partition(self) -> tuple[str, int]:
        return (self.record.topic, self.record.partition)

    @property
    def image(self) -> bytes:
        assert self.record.value is not None  # validation guarantees it
        return self.record.value


@dataclass(frozen=True, slots=True)
class Rejection:
    stage: ErrorStage
    reason: ErrorReason
    detail: str


class _Invalid(Exception):
    def __init__(self, reason: ErrorReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _last_header(headers: Headers, name: str) -> bytes | None:
    """Kafka allows repeated headers; like the Java client's lastHeader, the last one wins."""
    for header_name, value in reversed(headers):
        if header_name == name:
            return value
    return None


def _text(raw: bytes | None, what: str) -> str | None:
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise _Invalid(ErrorReason.INVALID_HEADER, f"{what} is not UTF-8") from None
    return text or None


def parse_captured_at(text: str) -> datetime:
    """ISO-8601 (a naive time is taken as UTC) or integer epoch milliseconds, as an aware UTC datetime."""
    try:
        if _EPOCH_MS.fullmatch(text):
            return datetime.fromtimestamp(int(text) / 1000, tz=UTC)
        parsed = datetime.fromisoformat(text)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"captured_at {text[:64]!r} is neither ISO-8601 nor epoch milliseconds") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def validate(record: InputRecord, max_frame_bytes: int, epoch: int = 0) -> Frame | Rejection:
    """A `Frame` ready for inference, or why the record goes to the dead-letter topic."""
    try:
        static = _static_size(_text(_last_header(record.headers, FrameHeader.STATIC), "header static"))
        if static is not None and record.value:
            raise _Invalid(ErrorReason.INVALID_HEADER, "a static marker (header static) must have no value")
        if not record.value and static is None:
            raise _Invalid(ErrorReason.EMPTY_FRAME, "the record has no value (JPEG bytes expected)")
        if record.value and len(record.value) > max_frame_bytes:
            raise _Invalid(
                ErrorReason.FRAME_TOO_LARGE,
                f"{len(record.value)} bytes exceed --max-frame-bytes {max_frame_bytes}",
            )
        camera_id = _text(_last_header(record.headers, FrameHeader.CAMERA_ID), "header camera_id") or _text(
            record.key, "record key (the camera id)"
        )
        if camera_id is None:
            raise _Invalid(ErrorReason.MISSING_CAMERA_ID, "neither a camera_id header nor a record key")
        problem = camera_id_problem(camera_id)
        if problem is not None:
            raise _Invalid(ErrorReason.INVALID_CAMERA_ID, f"camera id {problem}")
        frame_id = _text(_last_header(record.headers, FrameHeader.FRAME_ID), "header frame_id")
        captured_text = _text(_last_header(record.headers, FrameHeader.CAPTURED_AT), "header captured_at")
        try:
            captured_at = parse_captured_at(captured_text) if captured_text else None
        except ValueError as error:
            raise _Invalid(ErrorReason.INVALID_HEADER, str(error)) from None
    except _Invalid as invalid:
        return Rejection(ErrorStage.VALIDATE, invalid.reason, invalid.detail)
    return Frame(
        record=record,
        camera_id=camera_id,
        frame_id=frame_id or record.source_id,
        captured_at=captured_at,
        epoch=epoch,
        static=static,
    )


def _static_size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = _SIZE.fullmatch(text)
    if match is None:
        raise _Invalid(ErrorReason.INVALID_HEADER, f"header static {text[:32]!r} is not WIDTHxHEIGHT")
    return int(match.group(1)), int(match.group(2))
