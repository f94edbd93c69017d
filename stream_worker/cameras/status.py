"""Each camera's status on the compacted `camera-status` topic (key: the camera id, value: JSON),
written by the camera connector (connector/status.py) and read whole by `stream-worker cameras
status` and the console's Cameras page. A camera removed from the settings gets a tombstone.

Nothing secret is in a record: the source is the URL as stored (with its ${NAME} references) and
the last error went through the connector's `redact`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import orjson

DEFAULT_TOPIC = "camera-status"
STATUS_INTERVAL_S = 5.0  # the connector's default --status-interval-s: 3 missed make a record stale
# connector/states.py CameraState.ENDED's value (the layers keep this module from importing it; a
# test checks they agree): an ended file source is not renewed, and is not stale for that.
ENDED = "ended"


@dataclass(frozen=True)
class CameraStatus:
    camera_id: str
    state: str
    state_since: float  # epoch seconds
    last_error: str | None
    source: str  # as stored: ${NAME} references, never a resolved URL
    replica: str
    updated_at: float  # epoch seconds
    decoded_fps: float  # over the last status interval
    published_fps: float
    frames_decoded: int
    frames_published: int
    frames_static: int
    frames_dropped: int
    delivery_errors: int
    reconnects: int
    motion_share: float | None  # sampled frames with motion / sampled frames; None without motion
    last_frame_at: float | None
    static_markers: int | None = None  # added later: None in older records
    # Shedding (connector/shedding.py), added later: None in older records.
    offered_fps: float | None = None  # frames a second to publish before shedding ("10 of 25 fps")
    frames_offered: int | None = None
    frames_shed: int | None = None  # of those, left out because the workers were behind
    delay_s: float | None = None  # how long the frames the workers read now have waited
    max_delay_s: float | None = None  # the bound shedding keeps the delay under; 0: never shed

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, value: bytes) -> CameraStatus:
        data = orjson.loads(value)
        if not isinstance(data, dict):
            raise ValueError("a status record is a JSON object")
        for name, kind in REQUIRED.items():
            if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                raise ValueError(f"not a camera status: {name!r} missing or not a {kind}")
        # Fields added later are left out of older records; fields unknown here are ignored.
        return cls(**{name: data.get(name) for name in cls.__dataclass_fields__})


REQUIRED: dict[str, type | tuple[type, ...]] = {
    "camera_id": str,
    "state": str,
    "state_since": (int, float),
    "updated_at": (int, float),
}


def decode_status(key: bytes | None, value: bytes | None) -> tuple[str, CameraStatus | None]:
    """A `camera-status` record for `service/compacted.py`'s readers; ValueError when unusable."""
    if key is None:
        raise ValueError("record has no key")
    camera_id = key.decode("utf-8", "replace")
    if value is None:
        return camera_id, None
    return camera_id, CameraStatus.from_json(value)


def is_stale(status: CameraStatus, interval_s: float, now: float) -> bool:
    """Not written for 3 intervals: its replica is gone (another takes the camera over) or stuck."""
    return status.state != ENDED and now - status.updated_at > 3 * interval_s
