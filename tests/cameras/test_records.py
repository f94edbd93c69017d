"""The `cameras` topic's records: key = camera id, value = settings JSON, tombstone = defaults."""

from __future__ import annotations

import pytest

from stream_worker.cameras.records import (
    CameraRecordError,
    camera_id_problem,
    decode_record,
    encode_removal,
    encode_settings,
    validate_camera_id,
)
from stream_worker.contracts.cameras import CameraSettings, parse_settings

SETTINGS = parse_settings({"masks": [[[0, 0], [0.5, 0], [0.5, 0.5]]], "plate_images": True})


def test_settings_round_trip():
    key, value = encode_settings("gate-1", SETTINGS)
    assert key == b"gate-1"
    assert decode_record(key, value) == ("gate-1", SETTINGS)


def test_a_tombstone_is_the_defaults():
    assert encode_removal("gate-1") == (b"gate-1", None)
    assert decode_record(b"gate-1", None) == ("gate-1", None)


def test_non_ascii_camera_ids_are_utf8():
    key, value = encode_settings("въезд-1", CameraSettings())
    assert key == "въезд-1".encode()
    assert decode_record(key, value)[0] == "въезд-1"


@pytest.mark.parametrize(
    ("camera_id", "words"),
    [
        ("", "is empty"),
        (" gate", "leading or trailing spaces"),
        ("gate\n", "leading or trailing spaces"),
        ("ga\x00te", "control characters"),
        ("x" * 256, "256 characters, more than 255"),
    ],
)
def test_bad_camera_ids(camera_id, words):
    assert words in camera_id_problem(camera_id)
    with pytest.raises(ValueError, match="camera id"):
        validate_camera_id(camera_id)
    with pytest.raises(ValueError, match="camera id"):
        encode_settings(camera_id, SETTINGS)
    with pytest.raises(ValueError, match="camera id"):
        encode_removal(camera_id)


def test_good_camera_ids():
    for camera_id in ("gate-1", "cam 2", "x" * 255, "rtsp://10.0.0.1/stream"):
        assert validate_camera_id(camera_id) == camera_id


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        (None, b"{}", "has no key"),
        (b"\xff", b"{}", "not UTF-8"),
        (b"", b"{}", "key: camera id is empty"),
        (b"gate", b"not json", "settings of 'gate' are not JSON"),
        (b"gate", b"[1]", "must be a mapping"),
        (b"gate", b'{"masks": [[[0, 0], [2, 0], [1, 1]]]}', "masks[0] point 1 x"),
        (b"gate", b'{"unknown": 1}', "unknown: Extra inputs are not permitted"),
    ],
)
def test_undecodable_records_say_why(key, value, words):
    with pytest.raises(CameraRecordError) as caught:
        decode_record(key, value)
    assert words in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what the compacted-topic reader skips


def test_a_region_unknown_to_this_version_keeps_the_rest_of_the_record():
    """A newer version's region must not cost the camera its masks: the record is decoded whole."""
    camera_id, settings = decode_record(b"gate-1", b'{"region": "xx", "plate_images": true}')
    assert camera_id == "gate-1" and settings is not None
    assert (settings.region, settings.plate_images) == ("xx", True)
