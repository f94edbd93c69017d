"""Which reads belong to one vehicle pass: open groups per camera, joined and closed on camera time.

A read joins an open group of its camera when it comes within `gap_s` of the group's reads and
either its text is within `max_edit_distance` of a text the group has seen, or its box is where
the group's motion puts the plate at that time (within `motion_tolerance` plate widths). A read
whose text is not even half like the group's must lie within a third of that: a frame blurred
into noise is right where the plate is, while the next vehicle's plate appears near where the
last one was, not where its motion has taken it. A frame
gives each group at most one read; when several reads could join several groups, the closest
pairs go first (text matches before motion matches). A read that joins nothing opens a group.

A group closes when its camera's clock (the latest capture time seen) has moved more than
`gap_s` past its last read, or more than `max_group_s` past its first (a vehicle waiting in view
is reported again every `max_group_s`), or when the camera's clock has not moved for `silence_s`
of wall-clock time (its frames stopped coming: no capture time will close its groups). A
worker that stalls looks the same from here, so `silence_s` is set above the worker's stalls
(10 s: a 5 s stall mid-pass splits nothing), and a group closed by silence stays resumable: a
read that would have joined it (within `gap_s` of its reads, capture time) reopens it, and it
closes again later with all its reads, under the same first read (so the same sighting id: a
recognisable repeat, not a second pass; a crash meanwhile may publish the rest under another
id, as any silence can). It stops being resumable once its camera's clock has moved `gap_s`
past it or `max_group_s` past its first read. A clock that jumps back by more than
`max_group_s` closes everything open. All decisions but the silence depend only on the events,
so replaying them rebuilds the groups.

Frames not examined (the worker's motion gate found nothing moving: `Observation.examined` false)
are no evidence that the plate left: the gap is measured in examined time, with the stream time
they cover left out, so a vehicle standing at a barrier between its motion and the next
heartbeat stays one pass. They close nothing, and they move the camera's clock (it is still
filming) for the silence rule; the `max_group_s` rule still counts in stream time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from stream_worker.contracts import ClosedBy
from stream_worker.plates.distance import edit_distance
from stream_worker.sightings.reads import Observation, Read

CameraKey = tuple[int, str]  # (partition of the plates topic, camera id)
MAX_SIZE_STEP = 2.5  # a box more than this much larger or smaller than the group's is another plate
TRACK_POINTS = 5  # recent reads the motion is estimated from
RECENT_TEXTS = 16  # distinct texts of a group a new read is compared with
MOTION_MAX_EDIT_SHARE = 0.5  # a read joining by motion with this share of its characters wrong ...
UNRELATED_TOLERANCE_SHARE = 1 / 3  # ... or more, only this close to where the motion puts it


@dataclass(frozen=True, slots=True)
class GroupingRules:
    gap_s: float = 1.5
    silence_s: float = 10.0
    max_group_s: float = 30.0
    max_edit_distance: int = 2
    motion_tolerance: float = 1.5

    def __post_init__(self) -> None:
        if not 0 < self.gap_s < self.max_group_s:
            raise ValueError(
                f"gap_s ({self.gap_s}) must be positive and below max_group_s ({self.max_group_s})"
            )
        if self.silence_s <= 0 or self.max_edit_distance < 0 or self.motion_tolerance < 0:
            raise ValueError(
                "silence_s must be positive, max_edit_distance and motion_tolerance not negative"
            )


class Group:
    """The reads of one plate over one pass, in arrival order."""

    def __init__(self, key: CameraKey, read: Read, unexamined_s: float = 0.0) -> None:
        self.key = key
        self.reads: list[Read] = []
        self.texts: list[str] = []
        self.first_time = self.last_time = read.time
        # The same in examined time (stream time less the camera's time not examined).
        self.first_examined = self.last_examined = read.time - unexamined_s
        self.add(read, unexamined_s)

    @property
    def camera_id(self) -> str:
        return self.key[1]

    @property
    def first_read(self) -> Read:
        """The read consumed first: the one a replay meets first too."""
        return min(self.reads, key=lambda read: read.position)

    def add(self, read: Read, unexamined_s: float = 0.0) -> None:
        """`unexamined_s`: the camera's stream time not examined so far (see the module)."""
        self.reads.append(read)
        self.first_time = min(self.first_time, read.time)
        self.last_time = max(self.last_time, read.time)
        self.first_examined = min(self.first_examined, read.time - unexamined_s)
        self.last_examined = max(self.last_examined, read.time - unexamined_s)
        if read.text in self.texts:
            self.texts.remove(read.text)
        self.texts.append(read.text)
        del self.texts[:-RECENT_TEXTS]

    def text_distance(self, text: str) -> int:
        return min(edit_distance(text, seen) for seen in self.texts)

    def motion_distance(self, read: Read) -> float | None:
        """How far `read` lies from where the group's motion puts the plate at its time, in plate
        widths; None when its size rules it out."""
        track = sorted(self.reads[-TRACK_POINTS:], key=lambda r: r.time)
        reference = min(track, key=lambda r: (abs(r.time - read.time), -r.time))
        if not (1 / MAX_SIZE_STEP <= read.width / reference.width <= MAX_SIZE_STEP):
            return None
        vx, vy = _velocity(track)
        dt = read.time - reference.time
        (rx, ry), (x, y) = reference.centre, read.centre
        return math.hypot(x - (rx + vx * dt), y - (ry + vy * dt)) / max(reference.width, read.width)


def _velocity(track: list[Read]) -> tuple[float, float]:
    """Least-squares speed of the box centre (pixels per second); zero without a time spread."""
    times = [read.time for read in track]
    mean_t = sum(times) / len(times)
    spread = sum((t - mean_t) ** 2 for t in times)
    if spread == 0:
        return 0.0, 0.0
    centres = [read.centre for read in track]
    mean_x = sum(c[0] for c in centres) / len(centres)
    mean_y = sum(c[1] for c in centres) / len(centres)
    vx = sum((t - mean_t) * (c[0] - mean_x) for t, c in zip(times, centres, strict=True)) / spread
    vy = sum((t - mean_t) * (c[1] - mean_y) for t, c in zip(times, centres, strict=True)) / spread
    return vx, vy


@dataclass(frozen=True, slots=True)
class Closed:
    group: Group
    reason: ClosedBy


@dataclass(slots=True)
class _Camera:
    clock: float
    last_wall: float  # wall-clock seconds when `clock` last moved on
    groups: list[Group] = field(default_factory=list)
    silenced: list[Group] = field(default_factory=list)  # closed by silence, still resumable
    unexamined_s: float = 0.0  # stream seconds covered by frames not examined, ever growing


class Grouper:
    """Open groups of every camera; pure: times come in, nothing is read from a clock."""

    def __init__(self, rules: GroupingRules) -> None:
        self.rules = rules
        self._cameras: dict[CameraKey, _Camera] = {}

    def observe(
        self, partition: int, observation: Observation, now: float
    ) -> tuple[list[Closed], list[tuple[Read, Group]]]:
        """Take one event of a camera (`now`: wall-clock seconds, for the silence rule).

        Returns the groups this closed (before placing the reads) and where each read went.
        """
        key = (partition, observation.camera_id)
        rules = self.rules
        time = observation.time
        camera = self._cameras.get(key)
        closed: list[Closed] = []
        if camera is None:
            camera = self._cameras[key] = _Camera(clock=time, last_wall=now)
        if not observation.examined:  # no reads, and no evidence that a plate has gone
            if time > camera.clock:
                camera.unexamined_s += time - camera.clock
                camera.clock, camera.last_wall = time, now
            return [], []
        if time < camera.clock - rules.max_group_s:  # the camera's clock was set back
            closed += self._close(camera, camera.groups, ClosedBy.GAP)
            camera.silenced = []
            camera.clock, camera.last_wall = time, now
        if time > camera.clock:
            camera.clock, camera.last_wall = time, now
        examined_clock = camera.clock - camera.unexamined_s
        closed += self._close(
            camera,
            [g for g in camera.groups if examined_clock - g.last_examined > rules.gap_s],
            ClosedBy.GAP,
        )
        closed += self._close(
            camera,
            [g for g in camera.groups if camera.clock - g.first_time > rules.max_group_s],
            ClosedBy.MAX_DURATION,
        )
        camera.silenced = [
            g
            for g in camera.silenced
            if examined_clock - g.last_examined <= rules.gap_s
            and camera.clock - g.first_time <= rules.max_group_s
        ]
        placed = self._place(key, camera, observation.reads)
        return closed, placed

    def _place(self, key: CameraKey, camera: _Camera, reads: tuple[Read, ...]) -> list[tuple[Read, Group]]:
        rules = self.rules
        unexamined_s = camera.unexamined_s
        candidates, open_count = camera.groups + camera.silenced, len(camera.groups)
        pairs: list[tuple[float, int, int]] = []  # (cost, read index, group index)
        for r, read in enumerate(reads):
            examined_time = read.time - unexamined_s
            for g, group in enumerate(candidates):
                first, last = min(group.first_time, read.time), max(group.last_time, read.time)
                if not (
                    group.first_examined - rules.gap_s <= examined_time <= group.last_examined + rules.gap_s
                ):
                    continue
                if last - first > rules.max_group_s:
                    continue
                distance = group.text_distance(read.text)
                if distance <= rules.max_edit_distance:
                    pairs.append((float(distance), r, g))
                    continue
                tolerance = rules.motion_tolerance
                if distance > MOTION_MAX_EDIT_SHARE * len(read.text):
                    tolerance *= UNRELATED_TOLERANCE_SHARE
                motion = group.motion_distance(read)
                if motion is not None and motion <= tolerance:
                    pairs.append((rules.max_edit_distance + 1 + motion, r, g))
        placed: dict[int, Group] = {}
        taken: set[int] = set()
        for _, r, g in sorted(pairs):
            if r not in placed and g not in taken:
                placed[r] = candidates[g]
                taken.add(g)
        resumed = [candidates[g] for g in sorted(taken) if g >= open_count]  # closed by silence
        for group in resumed:
            camera.silenced.remove(group)
        camera.groups += resumed
        result = []
        for r, read in enumerate(reads):
            if r in placed:
                placed[r].add(read, unexamined_s)
            else:
                placed[r] = Group(key, read, unexamined_s)
                camera.groups.append(placed[r])
            result.append((read, placed[r]))
        return result

    def expire(self, now: float) -> list[Closed]:
        """Close the groups of cameras silent for `silence_s` of wall-clock time."""
        closed: list[Closed] = []
        for camera in self._cameras.values():
            if camera.groups and now - camera.last_wall > self.rules.silence_s:
                silenced = self._close(camera, camera.groups, ClosedBy.SILENCE)
                camera.silenced += [item.group for item in silenced]
                closed += silenced
        return closed

    def forget(self, partition: int) -> list[Group]:
        """Drop the cameras of a partition no longer ours; returns their open groups."""
        dropped = []
        for key in [key for key in self._cameras if key[0] == partition]:
            dropped += self._cameras.pop(key).groups
        return dropped

    def open_groups(self) -> Iterator[Group]:
        for camera in self._cameras.values():
            yield from camera.groups

    @staticmethod
    def _close(camera: _Camera, groups: list[Group], reason: ClosedBy) -> list[Closed]:
        closing = sorted(groups, key=lambda group: group.first_read.position)
        ids = {id(group) for group in closing}
        camera.groups = [group for group in camera.groups if id(group) not in ids]
        return [Closed(group, reason) for group in closing]
