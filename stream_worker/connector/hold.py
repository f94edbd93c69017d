"""The connector's pre-roll ring that also says what it lets go: every sampled frame comes out
exactly once, in stream order, either examined (published with its image) or static (published as
a static marker, a record with no image, so that the worker answers it with a not-examined event
and the sightings service sees the camera watched while nothing moves).

A static frame is held for `seconds` (at most `max_items`); motion releases the held frames as
pre-roll, then itself; a post-roll or heartbeat frame comes out alone, the held frames (older) then
being static. A held frame in which not one pixel differed from the motion gate's background
(`unchanged`) comes out static even before motion: nothing was in it that the background lacks, so
not the vehicle that then moved (a readable plate's vehicle is tens of pixels wide even on the
gate's reduced copy). On bench gating's stream, where each pass begins with a cut, that is every
pre-roll frame. Pure.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

from stream_worker.cameras.motion import TIME_EPSILON_S, Decision

T = TypeVar("T")

Out = tuple[T, bool]  # (the frame, examined)


class StaticHold(Generic[T]):
    def __init__(self, seconds: float, max_items: int) -> None:
        if seconds < 0 or max_items < 0:
            raise ValueError("seconds and max_items must not be negative")
        self.seconds = seconds
        self.max_items = max_items
        self._held: deque[tuple[float, T, bool]] = deque()  # (time, frame, worth a look as pre-roll)

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> list[Out[T]]:
        """Let go of every held frame, as static (a stream that ends or starts again)."""
        out = [(item, False) for _, item, _ in self._held]
        self._held.clear()
        return out

    def admit(self, t: float, item: T, decision: Decision, unchanged: bool = False) -> list[Out[T]]:
        """What comes out now, in order: frames that fell out of the ring (static), then those this
        frame releases. `unchanged`: the frame does not differ from the background at all (see the
        module)."""
        held = self._held
        out: list[Out[T]] = []
        if held and t < held[-1][0]:
            out += self.clear()  # time went backwards: what is held is not before this frame
        while held and held[0][0] < t - self.seconds - TIME_EPSILON_S:
            out.append((held.popleft()[1], False))
        if decision is Decision.STATIC:
            if self.seconds > 0 and self.max_items > 0:
                held.append((t, item, not unchanged))
                if len(held) > self.max_items:
                    out.append((held.popleft()[1], False))
            else:
                out.append((item, False))
            return out
        rolls = decision is Decision.MOTION
        out += [(held_item, rolls and worth) for _, held_item, worth in held]
        held.clear()
        out.append((item, True))
        return out


class MarkerThinner(Generic[T]):
    """Fewer static markers: one per `interval_s` of a static stretch, plus the last static frame
    before each examined one (published just before it, in order), instead of one per static frame.

    The sightings and alerts services count the stream time up to a not-examined event as not
    examined; the marker just before an examined frame keeps that count as exact as one marker per
    frame did (the time between it and the examined frame is one frame's), while a still camera
    costs the broker and the worker one record a second instead of `fps` (a marker cost the broker
    nearly what a frame does on bench gating's stream). `interval_s` 0: every static frame. Pure:
    `take` each (frame, examined) that `StaticHold` lets go, in order, with its time; `flush` at
    the end of a stream."""

    def __init__(self, interval_s: float) -> None:
        if interval_s < 0:
            raise ValueError("interval_s must not be negative")
        self.interval_s = interval_s
        self._last: float | None = None  # time of the last record let through
        self._pending: tuple[float, T] | None = None  # the latest static frame skipped

    def take(self, t: float, item: T, examined: bool) -> list[Out[T]]:
        """What to publish now, in order (see the class)."""
        if examined:
            out: list[Out[T]] = self.flush()
            out.append((item, True))
            self._last = t
            return out
        last = self._last
        if last is None or t < last or t - last >= self.interval_s - TIME_EPSILON_S:
            self._pending = None
            self._last = t
            return [(item, False)]
        self._pending = (t, item)
        return []

    def flush(self) -> list[Out[T]]:
        """The skipped static frame still pending, as a marker (before an examined frame, or at the
        end of a stream so that its static time is accounted for)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return []
        self._last = pending[0]
        return [(pending[1], False)]
