"""The `cameras` topic's records: key = the camera id (UTF-8), value = its `CameraSettings` as JSON
(orjson), tombstone (null value) = the camera is back to the defaults."""

from __future__ import annotations

from stream_worker.contracts.cameras import CameraSettings, CameraSettingsError, parse_settings
from stream_worker.contracts.ids import camera_id_problem
from stream_worker.contracts.records import json_value, text_key


class CameraRecordError(ValueError):
    """A `cameras` record (key or value) that cannot be decoded into settings or a removal."""


def validate_camera_id(camera_id: str) -> str:
    """`camera_id` when it is one (contracts/ids.py), else ValueError saying why."""
    problem = camera_id_problem(camera_id)
    if problem is not None:
        raise ValueError(f"camera id {problem}")
    return camera_id


def encode_settings(camera_id: str, settings: CameraSettings) -> tuple[bytes, bytes]:
    """The record that gives `camera_id` these settings."""
    return validate_camera_id(camera_id).encode(), settings.to_json()


def encode_removal(camera_id: str) -> tuple[bytes, None]:
    """The tombstone that puts `camera_id` back to the defaults."""
    return validate_camera_id(camera_id).encode(), None


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, CameraSettings | None]:
    """(camera id, settings) of a record; settings None for a tombstone. CameraRecordError says
    why a record is unusable."""
    camera_id = text_key(key, "the camera id", CameraRecordError)
    problem = camera_id_problem(camera_id)
    if problem is not None:
        raise CameraRecordError(f"key: camera id {problem}")
    if value is None:
        return camera_id, None
    data = json_value(value, f"settings of {camera_id!r} are not JSON", CameraRecordError)
    try:
        return camera_id, parse_settings(data, f"settings of {camera_id!r}", keep_unknown_region=True)
    except CameraSettingsError as error:
        raise CameraRecordError(str(error)) from error
