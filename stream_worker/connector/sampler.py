"""Sampling a stream to a camera's `fps` by the stream's own timestamps, not by arrival time.

A frame is kept when its stream time reaches the next slot of a grid `1 / fps` apart; the grid
then moves past the frame, so a gap in the stream (lost packets, a pause) is not made up for with a
burst. Time going backwards (a stream restarted, a file looped) starts the grid again from that
frame, and the caller is told (`restarted`) so that it re-anchors its wall clock. A frame without a
timestamp is given one by the caller (see `StreamTime`).
"""

from __future__ import annotations

import math

SLOT_TOLERANCE = 0.1  # of a slot
BACKWARDS_TOLERANCE_S = 1e-3  # timestamps rounded to the stream's time base may repeat, never recede


class FpsSampler:
    """Keeps frames `1 / fps` apart in stream time (see the module)."""

    def __init__(self, fps: float) -> None:
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError("fps must be a positive number")
        self.interval = 1.0 / fps
        self._next: float | None = None
        self._last: float | None = None
        self.restarted = False  # the last `keep` call saw time go backwards

    def reset(self) -> None:
        self._next = None
        self._last = None

    def keep(self, t: float) -> bool:
        """Whether the frame at stream time `t` (seconds) is kept."""
        self.restarted = False
        if self._last is not None and t < self._last - BACKWARDS_TOLERANCE_S:
            self.restarted = True
            self._next = None
        self._last = t if self._last is None or self.restarted else max(self._last, t)
        if self._next is None:
            self._next = t + self.interval
            return True
        # A tenth of a slot early still counts: timestamps rounded to a coarse time base, or a
        # stream at 30.0006 fps sampled to 30, land a hair before their slot.
        if t < self._next - self.interval * SLOT_TOLERANCE:
            return False
        steps = max(1, math.floor((t - self._next) / self.interval) + 1)
        self._next += steps * self.interval
        return True


class StreamTime:
    """A frame's stream time in seconds: pts x time base, or, for a frame without a pts, the last
    frame's time plus one frame duration of the stream's nominal rate (else of the sampled rate)."""

    def __init__(self, frame_duration_s: float) -> None:
        self.frame_duration_s = frame_duration_s
        self._last: float | None = None

    def reset(self) -> None:
        self._last = None

    def of(self, pts: int | None, time_base: float | None) -> float:
        if pts is not None and time_base:
            t = pts * time_base
        elif self._last is None:
            t = 0.0
        else:
            t = self._last + self.frame_duration_s
        self._last = t
        return t
