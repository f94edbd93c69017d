"""The connector's side of the `camera-status` topic (the record: cameras/status.py): each camera's
status made from its reader's counters, written by the replica that reads the camera every few
seconds and on each change of state. Nothing secret is in a record: the source is the URL as
stored (with its ${NAME} references) and the last error went through `redact`."""

from __future__ import annotations

import time

from stream_worker.cameras.status import CameraStatus
from stream_worker.connector.reader import CameraStats


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
    offered_fps: float | None = None,
    delay_s: float | None = None,
    max_delay_s: float | None = None,
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
        offered_fps=None if offered_fps is None else round(offered_fps, 2),
        frames_offered=stats.offered,
        frames_shed=stats.shed,
        delay_s=None if delay_s is None else round(delay_s, 2),
        max_delay_s=max_delay_s,
    )
