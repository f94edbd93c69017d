"""Input validation: every record becomes a Frame or a Rejection with a reason, never an exception."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.contracts import ErrorReason, ErrorStage
from stream_worker.worker.validate import Frame, InputRecord, Rejection, parse_captured_at, validate

JPEG = b"\xff\xd8\xff\xe0fake-jpeg"


def record(value=JPEG, key=b"cam-1", headers=(), offset=7) -> InputRecord:
    return InputRecord("frames", 2, offset, key, value, list(headers), received_at=0.0)


def test_a_plain_frame_takes_its_camera_from_the_key_and_its_id_from_the_source():
    frame = validate(record(), max_frame_bytes=1000, epoch=3)
    assert isinstance(frame, Frame)
    assert frame.camera_id == "cam-1"
    assert frame.frame_id == "frames:2:7"
    assert frame.captured_at is None
    assert frame.epoch == 3
    assert frame.image == JPEG


def test_headers_win_over_the_fallbacks():
    headers = [("camera_id", b"gate-3"), ("frame_id", b"f-42"), ("captured_at", b"2025-01-31T12:00:00.250Z")]
    frame = validate(record(headers=headers), 1000)
    assert isinstance(frame, Frame)
    assert (frame.camera_id, frame.frame_id) == ("gate-3", "f-42")
    assert frame.captured_at == datetime(2025, 1, 31, 12, 0, 0, 250000, tzinfo=UTC)


def test_the_last_of_repeated_headers_wins():
    frame = validate(record(headers=[("camera_id", b"old"), ("camera_id", b"new")]), 1000)
    assert isinstance(frame, Frame)
    assert frame.camera_id == "new"


def test_empty_headers_fall_back():
    frame = validate(record(headers=[("camera_id", b""), ("frame_id", None), ("captured_at", b" ")]), 1000)
    assert isinstance(frame, Frame)
    assert (frame.camera_id, frame.frame_id, frame.captured_at) == ("cam-1", "frames:2:7", None)


def test_unknown_headers_are_ignored():
    assert isinstance(validate(record(headers=[("trace-id", b"\xff\xfe")]), 1000), Frame)


@pytest.mark.parametrize(
    ("value", "key", "headers", "reason", "detail"),
    [
        (None, b"cam", [], ErrorReason.EMPTY_FRAME, "no value"),
        (b"", b"cam", [], ErrorReason.EMPTY_FRAME, "no value"),
        (b"x" * 1001, b"cam", [], ErrorReason.FRAME_TOO_LARGE, "1001 bytes exceed --max-frame-bytes 1000"),
        (JPEG, None, [], ErrorReason.MISSING_CAMERA_ID, "neither"),
        (JPEG, b"", [], ErrorReason.MISSING_CAMERA_ID, "neither"),
        (JPEG, b"\xff\xfe", [], ErrorReason.INVALID_HEADER, "record key"),
        (JPEG, b"cam", [("camera_id", b"\xc3\x28")], ErrorReason.INVALID_HEADER, "camera_id is not UTF-8"),
        (JPEG, b"cam", [("frame_id", b"\x80")], ErrorReason.INVALID_HEADER, "header frame_id is not UTF-8"),
        (JPEG, b"cam", [("captured_at", b"yesterday")], ErrorReason.INVALID_HEADER, "'yesterday' is neither"),
        (JPEG, b"cam", [("captured_at", b"\xff")], ErrorReason.INVALID_HEADER, "captured_at is not UTF-8"),
        (JPEG, b"cam", [("captured_at", b"99999999999999999")], ErrorReason.INVALID_HEADER, "captured_at"),
        # Not the contract's camera id (contracts/ids.py): an id that would end up in URL paths.
        (JPEG, b"x" * 255, [], ErrorReason.INVALID_CAMERA_ID, "camera id has 255 characters, more than 64"),
        (JPEG, b"cam", [("camera_id", b"../cameras/gate-1/remove?")], ErrorReason.INVALID_CAMERA_ID, "../"),
        (JPEG, b"x?y#z", [], ErrorReason.INVALID_CAMERA_ID, "'x?y#z' is not 1 to 64"),
        (JPEG, "въезд-1".encode(), [], ErrorReason.INVALID_CAMERA_ID, "camera id"),
    ],
)
def test_bad_records_are_rejected_with_a_reason(value, key, headers, reason, detail):
    rejection = validate(record(value=value, key=key, headers=headers), max_frame_bytes=1000)
    assert isinstance(rejection, Rejection)
    assert rejection.stage is ErrorStage.VALIDATE
    assert rejection.reason is reason
    assert detail in rejection.detail


def test_a_frame_exactly_at_the_limit_passes():
    assert isinstance(validate(record(value=b"x" * 1000), max_frame_bytes=1000), Frame)


def test_a_camera_header_rescues_a_record_without_key():
    frame = validate(record(key=None, headers=[("camera_id", b"cam-9")]), 1000)
    assert isinstance(frame, Frame)
    assert frame.camera_id == "cam-9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1738324800250", datetime(2025, 1, 31, 12, 0, 0, 250000, tzinfo=UTC)),
        ("0", datetime(1970, 1, 1, tzinfo=UTC)),
        ("2025-01-31T12:00:00", datetime(2025, 1, 31, 12, tzinfo=UTC)),  # naive: UTC
        ("2025-01-31T15:00:00+03:00", datetime(2025, 1, 31, 12, tzinfo=UTC)),
        ("2025-01-31", datetime(2025, 1, 31, tzinfo=UTC)),
    ],
)
def test_captured_at_formats(text, expected):
    assert parse_captured_at(text) == expected


@pytest.mark.parametrize("text", ["1.5e12", "2025-13-01T00:00:00", "now", "99999999999999999"])
def test_captured_at_garbage(text):
    with pytest.raises(ValueError, match="neither ISO-8601 nor epoch milliseconds"):
        parse_captured_at(text)


header_names = st.sampled_from(["camera_id", "frame_id", "captured_at", "other"])


@given(
    value=st.none() | st.binary(max_size=64),
    key=st.none() | st.binary(max_size=16),
    headers=st.lists(st.tuples(header_names, st.none() | st.binary(max_size=24)), max_size=6),
)
def test_any_bytes_yield_a_frame_or_a_rejection(value, key, headers):
    outcome = validate(record(value=value, key=key, headers=headers), max_frame_bytes=32)
    assert isinstance(outcome, Frame | Rejection)


# --- the connector's static markers ----------------------------------------------------------


def test_a_static_marker_is_a_frame_without_image_with_its_size():
    frame = validate(record(value=b"", headers=[("static", b"1920x1080")]), max_frame_bytes=1000)
    assert isinstance(frame, Frame)
    assert frame.static == (1920, 1080)
    assert validate(record(), max_frame_bytes=1000).static is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "static", "reason"),
    [
        (JPEG, b"1920x1080", ErrorReason.INVALID_HEADER),  # a marker carries no image
        (b"", b"1920*1080", ErrorReason.INVALID_HEADER),
        (b"", b"0x1080", ErrorReason.INVALID_HEADER),
        (b"", b"1920x1080x3", ErrorReason.INVALID_HEADER),
        (b"", b"\xff", ErrorReason.INVALID_HEADER),
    ],
)
def test_bad_static_markers_are_rejected(value, static, reason):
    rejected = validate(record(value=value, headers=[("static", static)]), max_frame_bytes=1000)
    assert isinstance(rejected, Rejection) and rejected.reason is reason
