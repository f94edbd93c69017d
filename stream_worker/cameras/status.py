"""Each camera's status on the compacted `camera-status` topic (key: the camera id, value: JSON),
written by the camera connector (connector/status.py) and read whole by `stream-worker cameras
status` and the console's Cameras page. A camera removed from the settings gets a tombstone.

Nothing secret is in a record: the source is the URL as stored (with its ${NAME} references) and
the last error went through the connector's `redact`.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass

import orjson

from stream_worker.contracts import topics

DEFAULT_TOPIC = topics.CAMERA_STATUS.name
STATUS_INTERVAL_S = 5.0  # the connector's default --status-interval-s: 3 missed make a record stale
# How far back a reading of the topic goes (`cameras status`, the console's start): a connector
# renews the record of every camera it holds every interval (an ended one too), so 4 intervals
# find them all, a replica that stopped a little while ago shown stale; the reading costs the same
# after a week of history as after a minute. On the durable local broker each record of the window
# is one fetch (~30 ms idle): 20 cameras make 80. A camera whose connector stopped longer ago is
# not shown (`cameras status --since 0`: the whole topic).
STATUS_WINDOW_S = 4 * STATUS_INTERVAL_S
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
        """A record checked field by field against the types above, texts cut to TEXT_MAX_CHARS;
        ValueError (naming the field, never its value) for anything else. Fields unknown here
        (a newer connector's) are ignored; fields with a default may be missing (an older one's)."""
        return cls.from_dict(orjson.loads(value))

    @classmethod
    def from_dict(cls, data: object) -> CameraStatus:
        """`from_json` of a decoded record (the console's answer to `cameras status` too)."""
        if not isinstance(data, dict):
            raise ValueError("a status record is a JSON object")
        return cls(
            **{
                name: _checked(name, data)
                for name in cls.__dataclass_fields__
                if name in data or name in REQUIRED
            }
        )


# Longer texts (a 1 MB last_error) are cut here, before any page or table shows them.
TEXT_MAX_CHARS = 1000
KEY_MAX_BYTES = 256
_KINDS: dict[str, tuple[type, ...]] = {
    "float": (int, float),
    "int": (int,),
    "str": (str,),
    "None": (type(None),),
}


def _checked(name: str, data: dict[str, object]) -> object:
    annotation = str(CameraStatus.__dataclass_fields__[name].type)
    if name not in data:
        if "None" in annotation:
            return None
        raise ValueError(f"not a camera status: {name!r} missing")
    value = data[name]
    kinds = [_KINDS.get(part.strip()) for part in annotation.split("|")]
    if None in kinds:  # a type this check does not know: taken as it is
        return value
    allowed = tuple(kind for group in kinds for kind in group if group is not None)
    if isinstance(value, bool) or not isinstance(value, allowed):
        raise ValueError(f"not a camera status: {name!r} is not {annotation}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"not a camera status: {name!r} is not a finite number")
    if isinstance(value, str) and len(value) > TEXT_MAX_CHARS:
        return value[: TEXT_MAX_CHARS - 1] + "…"
    return value


REQUIRED = {name for name, spec in CameraStatus.__dataclass_fields__.items() if spec.default is MISSING}


def decode_status(key: bytes | None, value: bytes | None) -> tuple[str, CameraStatus | None]:
    """A `camera-status` record for `service/compacted.py`'s readers; ValueError when unusable."""
    if key is None:
        raise ValueError("record has no key")
    if len(key) > KEY_MAX_BYTES:
        raise ValueError(f"record key longer than {KEY_MAX_BYTES} bytes")
    camera_id = key.decode("utf-8", "replace")
    if value is None:
        return camera_id, None
    return camera_id, CameraStatus.from_json(value)


def is_stale(status: CameraStatus, interval_s: float, now: float) -> bool:
    """Not written for 3 intervals: its replica is gone (another takes the camera over) or stuck."""
    return status.state != ENDED and now - status.updated_at > 3 * interval_s
