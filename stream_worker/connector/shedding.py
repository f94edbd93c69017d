"""How many frames a second a live camera may publish so that its frames wait for the workers no
longer than its `max_delay_s`: additive increase, multiplicative decrease (AIMD) on the delay of
the camera's partition of `frames` (lag.py), as TCP does on a congested link. The delay is the wait
a frame published now would have (the frames ahead of it over the workers' pace), which a cut
stops from growing at once; the age of the frame being read would show a cut only after the
frames published before it are read, and lead to cutting far too much.

- Above half the bound the allowed rate is halved, then again each second while the delay does
  not fall.
- Under a quarter of the bound it grows back by half a frame a second each second, up to its
  full rate; in between it holds. Slowly: the workers' commits come a batch at a time, seconds
  apart, so a faster growth overshoots their pace by the time the wait shows it.
- An unknown delay (no worker has committed yet, the broker does not answer) changes nothing.
- Several cameras sharing a worker group each cut and grow on their own: AIMD shares the
  capacity between them.

`RateGate` then keeps frames on a grid of the allowed rate by capture time, so the frames
published stay evenly spread (not bursts with gaps).
"""

from __future__ import annotations

import math

from stream_worker.connector.sampler import FpsSampler

CUT_ABOVE = 0.5  # of the bound
GROW_BELOW = 0.25  # of the bound
CUT_FACTOR = 0.5
CUT_EVERY_S = 1.0  # at most one cut a second, and only while the delay is not falling
GROW_FPS_PER_S = 0.5
MAX_STEP_S = 1.0  # a late update grows the rate by at most one second's worth
MIN_FPS = 0.2  # a camera is never shed below this (one frame in 5 s)


class Shedding:
    """The allowed rate of one camera (see the module). `max_delay_s` 0: never shed."""

    def __init__(self, fps: float, max_delay_s: float) -> None:
        if not (fps > 0 and math.isfinite(fps)):
            raise ValueError("fps must be a positive number")
        if not (max_delay_s >= 0 and math.isfinite(max_delay_s)):
            raise ValueError("max_delay_s must be a number of seconds, 0 or more")
        self.fps = fps
        self.max_delay_s = max_delay_s
        self.allowed_fps = fps
        self.delay_s: float | None = None  # the last delay seen
        self._updated_at: float | None = None
        self._cut_at: float | None = None

    @property
    def limit(self) -> float | None:
        """The rate to keep frames to; None while the camera publishes all its frames."""
        return None if self.allowed_fps >= self.fps else self.allowed_fps

    def update(self, delay_s: float | None, now: float) -> float | None:
        """Take the partition's delay at monotonic time `now`; the new `limit`."""
        step = 0.0 if self._updated_at is None else min(MAX_STEP_S, max(0.0, now - self._updated_at))
        self._updated_at = now
        previous, self.delay_s = self.delay_s, delay_s
        if delay_s is None or self.max_delay_s == 0:
            return self.limit
        if delay_s > self.max_delay_s * CUT_ABOVE:
            if self._cut_at is None or (
                now - self._cut_at >= CUT_EVERY_S and (previous is None or delay_s >= previous)
            ):
                self.allowed_fps = max(min(MIN_FPS, self.fps), self.allowed_fps * CUT_FACTOR)
                self._cut_at = now
        elif delay_s < self.max_delay_s * GROW_BELOW:
            self._cut_at = None
            self.allowed_fps = min(self.fps, self.allowed_fps + GROW_FPS_PER_S * step)
        return self.limit


class RateGate:
    """Keeps frames `1 / fps` apart in capture time, `fps` changing as the shedding decides; every
    frame while there is no limit."""

    def __init__(self) -> None:
        self._grid: FpsSampler | None = None

    def keep(self, t: float, fps: float | None) -> bool:
        if fps is None:
            self._grid = None
            return True
        if self._grid is None:
            self._grid = FpsSampler(fps)
        self._grid.interval = 1.0 / fps
        return self._grid.keep(t)
