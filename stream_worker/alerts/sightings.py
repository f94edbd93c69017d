"""Which voted sightings raise an alert, and which sightings offsets may be committed: the sightings
side of the alerts pipeline without Kafka, a function of the records, times and memory handed in.

A sighting (one vehicle pass, voted by the sightings service) alerts for a watch-list entry that
its voted text or one of its top candidates matches (candidates.py), unless the reads of that
pass already alerted for that camera and entry:
- a remembered read pass of the same plates partition, camera and entry has a read within the
  sighting's first..last plates offsets (recent.py); or
- its best read, a read of the pass, matches the entry with at least the reads' minimum
  confidence: the reads side alerted on it (or on an earlier read of its pass), in whichever
  process reads that plates partition.
Then nothing is published (the sighting only confirms the pass). Nor is anything published for a
sighting within the cooldown, in capture time, of its camera and entry's last alert (cooldowns.py,
shared with the reads side): a pass the sightings service cut in two, or whose reads alerted on a
first read the sighting does not hold, alerts once. Otherwise ONE alert per sighting
and entry, with origin `sighting`, its id from the sighting's id (alert.py), so a consumer can tell
it apart from a read alert: it comes later (the sighting is published once its pass has ended) and
says which candidate matched. Only sightings of the plates topic the reads come from are checked
against the reads; a sighting of another plates topic alerts on its own.

A sighting consumed before this process consumed its pass's reads (a plates backlog, after a
restart or an outage: the sightings topic is smaller and is read faster) waits for them: it is
decided once the plates partition it came from has been consumed past its last read, or its last
read lies below the plates group's committed position found at assignment (a restart: those reads
are not read again), once this process no longer reads that partition, or after `max_wait_s`
(`ready`). Otherwise its reads could
alert after it had alerted for them. A sighting of a partition this process does not read is
decided at once; while it reads none (at the start, in a rebalance) every sighting waits.

Commits: a sightings offset is committed only once its sighting is decided and the alerts raised
for it are acknowledged by the broker (holds, as on the plates side); a restart reads the
uncommitted sightings again and repeats their alerts with their ids.

The memory also holds the read alerts read back from the alerts topic (history.py): those of an
earlier run (after a restart) and of other replicas (which may read the sighting's plates
partition), each as its pass's first matching read.

What the memory cannot know, and what follows (at-least-once; consumers tell these apart by
`origin` and dedupe by `sighting_id`):
- a read alert not yet read back when the sighting is decided (another replica behind on its
  plates, or the alerts topic read slowly), or beyond the history read at the start
  (`history_alerts` per partition);
- a sighting whose reads do not include its pass's first matching read (the sightings service
  grouped the reads otherwise) overlaps only a live pass of this process;
- a sighting that waited `max_wait_s` for its reads is decided without them (counted);
- a read pass forgotten (older than the memory's age or count) before its sighting arrives.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from stream_worker.alerts.alert import build_sighting_alert
from stream_worker.alerts.candidates import SightingMatch, match_sighting
from stream_worker.alerts.cooldowns import Cooldowns
from stream_worker.alerts.held import HeldAlert
from stream_worker.alerts.recent import RecentPasses
from stream_worker.contracts import PlateAlert, PlateSighting
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.plates.matching import Matcher
from stream_worker.service.offsets import PartitionOffsets, TopicBook


@dataclass(frozen=True, slots=True)
class SightingRules:
    plates_topic: str  # the topic the read passes come from
    top_candidates: int = 3
    min_confidence: float = 0.5  # the reads' own minimum (passes.PassRules)
    max_wait_s: float = 30.0  # the longest a sighting waits for its reads (monotonic seconds)


@dataclass(frozen=True, slots=True)
class SightingOutgoing(HeldAlert):
    """A sighting alert to publish; `SightingAlerts.delivered` once the broker acknowledged it."""

    closed_at: datetime  # when the sightings service closed the sighting


@dataclass(frozen=True, slots=True)
class Waiting:
    """A sighting whose reads this process has yet to consume; its offset is held meanwhile."""

    sighting: PlateSighting
    partition: int  # of the sightings topic
    offset: int
    commits: PartitionOffsets
    since: float  # monotonic seconds


ReadsToCome = Callable[[int, int], bool]  # (plates partition, offset): not consumed yet, will be


def read_alerted(
    sighting: PlateSighting,
    entry: WatchEntry,
    matcher: Matcher,
    rules: SightingRules,
    recent: RecentPasses,
    now: float,
) -> bool:
    """Whether the reads of the sighting's pass alerted (or are alerting) for `entry` (module doc)."""
    source = sighting.source
    if source.topic != rules.plates_topic:
        return False
    key = (source.partition, sighting.camera_id, entry.plate)
    if recent.overlaps(key, source.first_offset, source.last_offset, now):
        return True
    best = sighting.best_read
    if not best.text or best.confidence < rules.min_confidence:
        return False
    when = best.captured_at or sighting.first_seen
    return any(match.entry.plate == entry.plate for match in matcher.match(best.text, now=when))


class SightingAlerts(TopicBook):
    def __init__(
        self,
        topic: str,
        rules: SightingRules,
        recent: RecentPasses,
        reads_to_come: ReadsToCome = lambda _partition, _offset: False,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cooldowns: Cooldowns | None = None,
    ) -> None:
        """`topic`: the sightings topic, whose offsets this commits; `cooldowns`: the reads side's
        (passes.py), so that reads and sightings share one cooldown per camera and entry."""
        super().__init__(topic)
        self.rules = rules
        self.recent = recent
        self.cooldowns = cooldowns
        self._reads_to_come = reads_to_come
        self._wall_clock = wall_clock
        self._waiting: deque[Waiting] = deque()
        self.confirmed = 0  # sighting matches already alerted by reads (nothing published)
        self.waited_out = 0  # sightings decided without their reads, after max_wait_s
        self.cooled = 0  # sighting matches within the cooldown of their camera and entry's last alert

    # --- assignment ------------------------------------------------------------------------

    def assign(self, partition: int) -> None:
        self._start(partition)

    def revoke(self, partition: int) -> int:
        """Forget a partition and its waiting sightings; returns how many of its alerts were
        unacknowledged (its next owner reads those sightings again, as the waiting ones)."""
        commits = self._find(partition)
        if commits is None:
            return 0
        self._stop(partition)
        waiting = sum(1 for item in self._waiting if item.commits is commits)
        self._waiting = deque(item for item in self._waiting if item.commits is not commits)
        return commits.held - waiting

    # --- records in, alerts out ------------------------------------------------------------

    def add(
        self, partition: int, offset: int, sighting: PlateSighting | None, matcher: Matcher, now: float
    ) -> list[SightingOutgoing]:
        """One record of the sightings topic (None: not a PlateSighting); `now`: monotonic seconds.
        A sighting whose reads are still to come waits (`ready` decides it later)."""
        commits = self._offsets(partition)
        commits.consumed(offset)
        if sighting is None:
            return []
        if self._awaits_reads(sighting):
            commits.hold(offset)
            self._waiting.append(Waiting(sighting, partition, offset, commits, now))
            return []
        return self._decide(sighting, partition, offset, commits, matcher, now)

    def ready(self, matcher: Matcher, now: float) -> list[SightingOutgoing]:
        """Decide the waiting sightings whose reads have been consumed (or whose wait is over)."""
        outgoing: list[SightingOutgoing] = []
        still: deque[Waiting] = deque()
        for item in self._waiting:
            if self._awaits_reads(item.sighting):
                if now - item.since < self.rules.max_wait_s:
                    still.append(item)
                    continue
                self.waited_out += 1
            outgoing += self._decide(item.sighting, item.partition, item.offset, item.commits, matcher, now)
            item.commits.release(item.offset)
        self._waiting = still
        return outgoing

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _awaits_reads(self, sighting: PlateSighting) -> bool:
        source = sighting.source
        return source.topic == self.rules.plates_topic and self._reads_to_come(
            source.partition, source.last_offset
        )

    def _decide(
        self,
        sighting: PlateSighting,
        partition: int,
        offset: int,
        commits: PartitionOffsets,
        matcher: Matcher,
        now: float,
    ) -> list[SightingOutgoing]:
        outgoing = []
        for found in match_sighting(sighting, matcher, self.rules.top_candidates):
            if read_alerted(sighting, found.match.entry, matcher, self.rules, self.recent, now):
                self.confirmed += 1
                continue
            if self._cooling(sighting, found.match.entry):
                self.cooled += 1
                continue
            alert = self._alert(sighting, found)
            outgoing.append(SightingOutgoing(alert, partition, offset, commits, sighting.closed_at))
            commits.hold(offset)
        return outgoing

    def _cooling(self, sighting: PlateSighting, entry: WatchEntry) -> bool:
        """True when the sighting lies in its camera and entry's cooldown; else its alert starts one."""
        source = sighting.source
        if self.cooldowns is None or source.topic != self.rules.plates_topic:
            return False
        key = (source.partition, sighting.camera_id, entry.plate)
        first, last = sighting.first_seen.timestamp(), sighting.last_seen.timestamp()
        if self.cooldowns.quiet(key, first, last, sighting.sighting_id):
            return True
        when = sighting.best_read.captured_at or sighting.first_seen
        self.cooldowns.alerted_sighting(key, when.timestamp(), sighting.sighting_id)
        return False

    def _alert(self, sighting: PlateSighting, found: SightingMatch) -> PlateAlert:
        ranked = found.ranked
        return build_sighting_alert(sighting, found.match, ranked.rank, ranked.score, self._wall_clock())

    def delivered(self, outgoing: SightingOutgoing) -> None:
        """The broker acknowledged `outgoing`'s alert: its sighting may be committed past."""
        if self.is_current(outgoing):
            outgoing.commits.release(outgoing.offset)

    def is_current(self, outgoing: SightingOutgoing) -> bool:
        """True while the partition of `outgoing` is still under the assignment it was made in."""
        return self._is_current(outgoing.partition, outgoing.commits)

    def held(self) -> int:
        """Sighting alerts holding back the commit position (not yet acknowledged)."""
        return super().held() - len(self._waiting)
