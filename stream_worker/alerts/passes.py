"""Which reads raise an alert, and which plates offsets may be committed: the alerts pipeline
without Kafka, a function of the records and times handed in (what a replay relies on).

One alert per pass: a pass is a camera's run of reads matching one watch-list entry. It ends by
the camera's capture time, whatever the pace at which its reads are consumed: when the camera's
frames move `gap_s` past its last matching read, or `max_pass_s` after its first read. The alert
is raised on the pass's FIRST matching read, without waiting for the pass to end (an alert is
wanted while the vehicle is still in view); later reads of the pass publish nothing. Consumers
get exactly one alert per pass and no follow-ups (no better read, no end of pass).

Wall clock only ends the passes of a camera whose capture time has not moved for `gap_s` (its
frames stopped coming, so no capture time will ever end them). Downstream of the worker a worker
that stalls looks the same, so such an end is resumable: a read that comes within `gap_s`
(capture time) of the pass's last read continues it without an alert, as does a read within the
cooldown after the entry's last alert on that camera (cooldowns.py). A pass that does not alert
(resumed, or in the cooldown) holds no commit: it has no alert whose id a replay must rebuild.

Frames the worker's motion gate did not examine (`examined: false`: nothing moved) are no evidence
that the vehicle left, as for the sightings' groups: the gap is measured in examined time (the
stream time such frames cover is left out), and they move the camera's capture time (it is still
filming). A vehicle standing at a barrier, still, between two bursts of reads stays one pass with
one alert. `max_pass_s` still counts in stream time. A camera whose capture time jumps back by
more than `max_pass_s` (its clock was set back) ends its passes.

Ids and commits: an alert's id is made from the position of its pass's first matching read
(alert.py), so a pass must be read again from that read after a crash. The commit position of a
partition therefore never passes the first read of an alerting pass that is open or whose alert
the broker has not acknowledged (a hold, service/offsets.py). Nor may it split a
finished pass: a commit inside a finished pass would make a restart read its tail as a new pass,
with a new id. A finished pass keeps its hold until the position it would leave is past its last
read (`_settle`). A restart reads from the commit and repeats the alerts of passes read again,
with their ids.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from stream_worker.alerts.alert import build_alert
from stream_worker.alerts.cooldowns import Cooldowns
from stream_worker.contracts import PlateAlert, PlateEvent, Source
from stream_worker.plates.matching import Matcher
from stream_worker.service.kafka import Partition
from stream_worker.service.offsets import PartitionOffsets, TopicBook

PassKey = tuple[int, str, str]  # (plates partition, camera id, entry plate)


@dataclass(frozen=True, slots=True)
class PassRules:
    min_confidence: float = 0.5
    gap_s: float = 3.0
    max_pass_s: float = 60.0
    cooldown_s: float = 10.0  # capture time after an alert in which the camera's entry alerts no more


@dataclass(slots=True)
class Pass:
    key: PassKey
    commits: PartitionOffsets  # the assignment it belongs to: a later one ignores its delivery
    first_offset: int
    last_offset: int
    first_time: float  # capture time (epoch s) of the first matching read
    last_time: float
    last_examined: float = 0.0  # last_time less the camera's stream time not examined by then
    alerting: bool = True  # False: resumed or in the cooldown, no alert and no hold
    closed: bool = False
    delivered: bool = False

    @property
    def finished(self) -> bool:
        return self.closed and self.delivered


@dataclass(slots=True)
class _Clock:
    """A camera's capture time as its events are consumed."""

    latest: float  # the newest capture time seen
    advanced_wall: float  # monotonic seconds when `latest` last moved on
    unexamined_s: float = 0.0  # stream seconds covered by frames not examined, ever growing


@dataclass(frozen=True, slots=True)
class Outgoing:
    """An alert to publish; `AlertEngine.delivered` once the broker acknowledged it."""

    alert: PlateAlert
    origin: Pass


class AlertEngine(TopicBook):
    def __init__(
        self,
        topic: str,
        rules: PassRules,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cooldowns: Cooldowns | None = None,
        on_pass: Callable[[Pass, float], None] = lambda started, now: None,
    ) -> None:
        """`cooldowns`: shared with the alerts history (history.py), else one of `rules`' own;
        `on_pass(pass, now)`: every pass as it starts, alerting or not."""
        super().__init__(topic)
        self.rules = rules
        self.cooldowns = cooldowns or Cooldowns(rules.gap_s, rules.cooldown_s)
        self._wall_clock = wall_clock
        self._on_pass = on_pass
        self._open: dict[tuple[int, str], dict[str, Pass]] = {}  # (partition, camera) -> plate -> pass
        self._clocks: dict[tuple[int, str], _Clock] = {}
        self._unsettled: dict[int, list[Pass]] = {}  # partition -> passes still holding an offset

    # --- assignment ------------------------------------------------------------------------

    def assign(self, partition: int, committed: int | None = None) -> None:
        """`committed`: the group's committed position, when known: the reads below it are done."""
        self.revoke(partition)
        self._start(partition, committed)
        self._unsettled[partition] = []

    def revoke(self, partition: int) -> int:
        """Forget a partition; its open passes are dropped uncommitted. Returns how many."""
        dropped = 0
        for camera in [key for key in self._open if key[0] == partition]:
            dropped += len(self._open.pop(camera))
        for camera in [key for key in self._clocks if key[0] == partition]:
            del self._clocks[camera]
        self._stop(partition)
        self._unsettled.pop(partition, None)
        return dropped

    def reads_to_come(self, partition: int, offset: int) -> bool:
        """True when a read at `offset` of `partition` may still raise an alert here (what a
        sighting of it waits for, sightings.py): this engine reads the partition and has neither
        consumed the offset nor found it below the committed position at assignment (unknown
        positions count as to come), or it has no partitions yet (a start or a rebalance: any
        may come to it)."""
        if not self.assigned():
            return True
        commits = self._find(partition)
        if commits is None:
            return False
        done_below = commits.next_offset if commits.next_offset is not None else commits.floor
        return done_below is None or done_below <= offset

    # --- records in, alerts out ------------------------------------------------------------

    def add(
        self, partition: int, offset: int, event: PlateEvent | None, matcher: Matcher, now: float
    ) -> list[Outgoing]:
        """One record of the plates topic (None: not a PlateEvent); `now`: monotonic seconds."""
        commits = self._offsets(partition)
        commits.consumed(offset)
        if event is None:
            return []
        when = event.captured_at or event.processed_at
        time = when.timestamp()
        camera = (partition, event.camera_id)
        clock = self._advance(camera, time, event.examined is not False, now)
        if event.examined is False:  # nothing looked for: no evidence that a plate has gone
            return []
        examined_time = time - clock.unexamined_s
        passes = self._open.setdefault(camera, {})
        for plate, open_pass in list(passes.items()):
            if time - open_pass.first_time >= self.rules.max_pass_s:
                self._close(passes.pop(plate), resumable=False)
            elif examined_time - open_pass.last_examined > self.rules.gap_s:
                self._close(passes.pop(plate), resumable=True)
        outgoing = []
        source = Source(topic=self.topic, partition=partition, offset=offset)
        for reading in event.plates:
            if not reading.text or reading.confidence < self.rules.min_confidence:
                continue
            for match in matcher.match(reading.text, now=when):
                known = passes.get(match.entry.plate)
                if known is not None:
                    known.last_offset = offset
                    known.last_time = max(known.last_time, time)
                    known.last_examined = max(known.last_examined, examined_time)
                    continue
                key = (partition, event.camera_id, match.entry.plate)
                resumed_from = self.cooldowns.resumes(key, time, offset)
                alerting = resumed_from is None and self.cooldowns.allows(key, time, offset)
                first_time = time if resumed_from is None else min(time, resumed_from)
                started = Pass(key, commits, offset, offset, first_time, time, examined_time, alerting)
                passes[match.entry.plate] = started
                self._on_pass(started, now)
                if not alerting:
                    continue
                self.cooldowns.alerted(key, time, offset)
                commits.hold(offset)
                self._unsettled[partition].append(started)
                alert = build_alert(event, reading, match, source, self._wall_clock())
                outgoing.append(Outgoing(alert, started))
        if not passes:
            del self._open[camera]
        return outgoing

    def _advance(self, camera: tuple[int, str], time: float, examined: bool, now: float) -> _Clock:
        """Move `camera`'s clock to a capture time; a clock set back ends the camera's passes."""
        clock = self._clocks.get(camera)
        if clock is None:
            clock = self._clocks[camera] = _Clock(time, now)
        elif time < clock.latest - self.rules.max_pass_s:
            for ended in self._open.pop(camera, {}).values():
                self._close(ended, resumable=False)
            clock.latest, clock.advanced_wall = time, now
        elif time > clock.latest:
            if not examined:
                clock.unexamined_s += time - clock.latest
            clock.latest, clock.advanced_wall = time, now
        return clock

    def expire(self, now: float) -> int:
        """End the passes of cameras whose capture time has not moved for `gap_s` of wall clock
        (resumable: see the module); how many."""
        ended = 0
        for camera, passes in list(self._open.items()):
            if now - self._clocks[camera].advanced_wall <= self.rules.gap_s:
                continue
            for open_pass in passes.values():
                self._close(open_pass, resumable=True)
                ended += 1
            del self._open[camera]
        return ended

    def _close(self, ended: Pass, resumable: bool) -> None:
        ended.closed = True
        if resumable:
            self.cooldowns.ended(ended.key, ended.first_time, ended.last_time)

    def delivered(self, outgoing: Outgoing) -> None:
        """The broker acknowledged `outgoing`'s alert."""
        origin = outgoing.origin
        if self._is_current(origin.key[0], origin.commits):
            origin.delivered = True

    def is_current(self, outgoing: Outgoing) -> bool:
        """True while the partition of `outgoing` is still under the assignment it was made in."""
        return self._is_current(outgoing.origin.key[0], outgoing.origin.commits)

    # --- commits ---------------------------------------------------------------------------

    def _settle(self, partition: int) -> None:
        """Release the holds of finished passes wholly below every remaining hold (module doc)."""
        unsettled = self._unsettled[partition]
        floor = min((p.first_offset for p in unsettled if not p.finished), default=math.inf)
        finished = [p for p in unsettled if p.finished]
        lowered = True
        while lowered:
            lowered = False
            for done in finished:
                if done.first_offset < floor <= done.last_offset:
                    floor, lowered = done.first_offset, True
        commits = self._offsets(partition)
        keep = []
        for item in unsettled:
            if item.finished and item.last_offset < floor:
                commits.release(item.first_offset)
            else:
                keep.append(item)
        self._unsettled[partition] = keep

    def committable(self) -> dict[Partition, int]:
        for partition in self.assigned():
            self._settle(partition)
        return super().committable()

    # --- observability ---------------------------------------------------------------------

    def open_passes(self) -> int:
        return sum(len(passes) for passes in self._open.values())

    def held(self) -> int:
        """Passes holding back the commit position (open, unacknowledged or straddled)."""
        return super().held()
