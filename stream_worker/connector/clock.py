"""Stream time to wall time for `captured_at`: the wall clock of a session's first frame plus the
stream offset since it.

Re-anchored (the next frame takes the wall clock again) after a reconnect, a loop or any jump
backwards, and when the mapping drifts from the wall clock by more than `max_drift_s` (a camera
whose clock runs fast or slow, a stream that paused): live video is about now, and a frame stamped
minutes away from its arrival would break the sightings' gaps.
"""

from __future__ import annotations

DEFAULT_MAX_DRIFT_S = 2.0


class StreamClock:
    def __init__(self, max_drift_s: float = DEFAULT_MAX_DRIFT_S) -> None:
        self.max_drift_s = max_drift_s
        self._anchor: tuple[float, float] | None = None  # (stream time, wall time)
        self.anchors = 0  # how many times the clock was (re-)anchored

    def reset(self) -> None:
        self._anchor = None

    def wall(self, t: float, now: float, check_drift: bool = True) -> float:
        """The wall time (epoch seconds) of the frame at stream time `t`, seen at wall time `now`.
        `check_drift` False for a paced file source, whose frames are on time by construction."""
        anchor = self._anchor
        if anchor is not None and t >= anchor[0]:
            wall = anchor[1] + (t - anchor[0])
            if not check_drift or abs(wall - now) <= self.max_drift_s:
                return wall
        self._anchor = (t, now)
        self.anchors += 1
        return now

    def due(self, t: float) -> float | None:
        """The wall time at which the frame at stream time `t` is due (pacing a file source at its
        own rate); None before the first anchor."""
        if self._anchor is None or t < self._anchor[0]:
            return None
        return self._anchor[1] + (t - self._anchor[0])
