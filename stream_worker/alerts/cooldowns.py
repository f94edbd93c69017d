"""When a camera's reads of a watch-list entry may raise an alert again: a memory, in capture
time, of the alerts raised and the passes that ended.

A matching read that joins no open pass (passes.py) starts a pass that alerts, unless:
- it lies within `gap_s` (capture time, either side) of the last read of an ended pass of the same
  camera and entry: the same vehicle, its reads late (a worker that stalled while the camera kept
  filming, frames out of order), so the pass is resumed, counted from its first read for
  `max_pass_s`, without an alert; or
- it lies within `cooldown_s` after (or `gap_s` before) the capture time of the entry's last
  alert on that camera: the cooldown.
The read that raised the last alert is exempt from both: a replay (after a restart, a rebalance)
raises that alert again, with its id.
A voted sighting alerts (sightings.py) only outside the cooldown of the last alert, read or
sighting, of its camera and entry: a pass the sightings service split, or whose reads fell short
of the reads' confidence, alerts once (`quiet`, `alerted_sighting`); the sighting that raised
the last alert is exempt, so that a replay repeats it.
Only a camera's own capture times are compared (cameras' clocks may differ). A pass ended by
`max_pass_s` leaves no resumable end (a vehicle that stays in view alerts again), only the
cooldown of its alert.

The alert times outlive a restart: they are read back from the alerts topic (history.py). The
pass ends do not; after a crash a resumed pass is judged by the cooldown alone. The memory holds
at most `max_keys` (camera, entry) pairs, the least recently touched forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

PassKey = tuple[int, str, str]  # (plates partition, camera id, entry plate)


@dataclass(slots=True)
class _Memory:
    alerted_at: float | None = None  # capture time of the last alert's read
    alerted_offset: int | None = None  # that read's plates offset
    alerted_sighting: str | None = None  # or the sighting that raised it
    ended_at: float | None = None  # capture time of the last read of the last resumable pass
    ended_from: float = 0.0  # that pass's first read's capture time


class Cooldowns:
    def __init__(self, gap_s: float, cooldown_s: float, max_keys: int = 10_000) -> None:
        if gap_s <= 0 or cooldown_s < 0 or max_keys < 1:
            raise ValueError(
                f"gap_s must be > 0, cooldown_s >= 0, max_keys >= 1; got {gap_s}, {cooldown_s}, {max_keys}"
            )
        self.gap_s = gap_s
        self.cooldown_s = cooldown_s
        self.max_keys = max_keys
        self._memory: OrderedDict[PassKey, _Memory] = OrderedDict()

    def resumes(self, key: PassKey, time: float, offset: int) -> float | None:
        """The first capture time of the ended pass that a read of `key` at `offset`, captured at
        `time`, continues; None when it continues none."""
        memory = self._memory.get(key)
        if memory is None or memory.ended_at is None or memory.alerted_offset == offset:
            return None
        return memory.ended_from if abs(time - memory.ended_at) <= self.gap_s else None

    def allows(self, key: PassKey, time: float, offset: int) -> bool:
        """May a pass of `key` whose first read (at `offset`) was captured at `time` alert?"""
        memory = self._memory.get(key)
        if memory is None or memory.alerted_at is None or memory.alerted_offset == offset:
            return True
        return not -self.gap_s <= time - memory.alerted_at < self.cooldown_s

    def alerted(self, key: PassKey, time: float, offset: int) -> None:
        """`key` alerted on the read at `offset` captured at `time` (here or, read back, earlier)."""
        memory = self._touch(key)
        if memory.alerted_at is None or time >= memory.alerted_at:
            memory.alerted_at, memory.alerted_offset, memory.alerted_sighting = time, offset, None

    def alerted_sighting(self, key: PassKey, time: float, sighting_id: str) -> None:
        """`key` alerted on a voted sighting whose best read was captured at `time`."""
        memory = self._touch(key)
        if memory.alerted_at is None or time >= memory.alerted_at:
            memory.alerted_at, memory.alerted_offset, memory.alerted_sighting = time, None, sighting_id

    def quiet(self, key: PassKey, first_time: float, last_time: float, sighting_id: str) -> bool:
        """Does a sighting of `key`, its reads captured from `first_time` to `last_time`, fall in
        the cooldown of the last alert (some capture time of it within `gap_s` before to
        `cooldown_s` after that alert's)? Its own alert, replayed, does not."""
        memory = self._memory.get(key)
        if memory is None or memory.alerted_at is None or memory.alerted_sighting == sighting_id:
            return False
        return first_time - self.cooldown_s < memory.alerted_at <= last_time + self.gap_s

    def ended(self, key: PassKey, first_time: float, last_time: float) -> None:
        """A pass of `key` with reads captured from `first_time` to `last_time` ended; a read near
        its end resumes it."""
        memory = self._touch(key)
        if memory.ended_at is None or last_time >= memory.ended_at:
            memory.ended_at, memory.ended_from = last_time, first_time

    def _touch(self, key: PassKey) -> _Memory:
        memory = self._memory.get(key)
        if memory is None:
            memory = self._memory[key] = _Memory()
            while len(self._memory) > self.max_keys:
                self._memory.popitem(last=False)
        else:
            self._memory.move_to_end(key)
        return memory

    def __len__(self) -> int:
        return len(self._memory)
