"""Each camera's status on the compacted `camera-status` topic (key: the camera id, value: JSON),
written by the replica that reads the camera every few seconds and on each change of state, and
read whole by `stream-worker cameras status`. A camera removed from the settings gets a tombstone.

Nothing secret is in a record: the source is the URL as stored (with its ${NAME} references) and
the last error went through `redact`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import orjson

from stream_worker.connector.reader import CameraStats
from stream_worker.connector.states import CameraState


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


class RateMeter:
    """Frames per second of a counter between two status records."""

    def __init__(self) -> None:
        self._last: tuple[float, int] | None = None

    def rate(self, count: int, now: float) -> float:
        last, self._last = self._last, (now, count)
        if last is None or now <= last[0]:
            return 0.0
        return max(0, count - last[1]) / (now - last[0])


def snapshot(
    camera_id: str,
    stats: CameraStats,
    dropped: int,
    source: str,
    replica: str,
    rates: tuple[float, float],
    with_motion: bool,
    now: float | None = None,
) -> CameraStatus:
    gated = stats.motion + stats.static
    return CameraStatus(
        camera_id=camera_id,
        state=stats.state.value,
        state_since=round(stats.state_since, 3),
        last_error=stats.last_error,
        source=source,
        replica=replica,
        updated_at=round(time.time() if now is None else now, 3),
        decoded_fps=round(rates[0], 2),
        published_fps=round(rates[1], 2),
        frames_decoded=stats.decoded,
        frames_published=stats.published,
        frames_static=stats.static,
        frames_dropped=dropped,
        delivery_errors=stats.delivery_errors,
        reconnects=stats.reconnects,
        motion_share=round(stats.motion / gated, 4) if with_motion and gated else None,
        last_frame_at=round(stats.last_frame_at, 3) if stats.last_frame_at is not None else None,
        static_markers=stats.markers,
    )


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
    return status.state != CameraState.ENDED and now - status.updated_at > 3 * interval_s
