"""The sightings pipeline without Kafka: records in, sightings to publish and commit positions out.

The app feeds it each consumed record of the plates topic in offset order per partition, tells it
when a sighting is acknowledged, and commits what it says is committable; everything it decides
is a function of the records and the times handed in, which is what the replay after a restart
(service/offsets.py) relies on and what the tests drive directly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from stream_worker.cameras.regions import region_pattern
from stream_worker.contracts import PlateSighting
from stream_worker.contracts.plate_formats import Region
from stream_worker.service.offsets import PartitionOffsets, TopicBook
from stream_worker.sightings.grouping import Closed, Group, Grouper, GroupingRules
from stream_worker.sightings.reads import Observation, Position
from stream_worker.sightings.sighting import VotingRules, build_sighting


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A sighting to publish; `SightingsEngine.delivered` once the broker acknowledged it."""

    sighting: PlateSighting
    partition: int
    hold: int
    commits: PartitionOffsets  # the assignment it belongs to: a later one ignores its delivery
    reads: tuple[Position, ...]  # where its reads are in the plates topic


@dataclass(slots=True)
class EngineCounts:
    replayed: int = 0  # groups rebuilt from reads already published, not published again
    too_few_reads: int = 0  # groups closed with fewer than min_reads reads, not published
    not_plates: int = 0  # sightings whose voted text is not a plate of the camera's format, not published


class SightingsEngine(TopicBook):
    """Groups and votes the reads of one plates topic; its commit position stays below the first
    read of an open pass or of an unacknowledged sighting (`held` counts both)."""

    def __init__(
        self,
        topic: str,
        grouping: GroupingRules,
        voting: VotingRules = VotingRules(),
        min_reads: int = 1,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        plate_format_of: Callable[[str], re.Pattern[str] | None] = lambda camera_id: None,
        region_of: Callable[[str], Region | None] = lambda camera_id: None,
        publish_non_plates: bool = False,
        on_not_plate: Callable[[PlateSighting], None] = lambda sighting: None,
        min_region_confidence: float = 0.0,
    ) -> None:
        """`plate_format_of(camera)`: the camera's own plate format, else `region_of(camera)`'s formats
        (None for both: `voting`'s, the Russian pattern); a sighting whose voted text is not of it is
        dropped and counted (`on_not_plate`), or, with `publish_non_plates`, published with
        format_valid false. A sighting of a camera with a region says which format it fits; one whose
        voted confidence is below `min_region_confidence` is no plate either (dropped and counted, or
        published as it is): a region's formats are loose enough for a caption's or a fragment's
        misreads to fit one, and the recognizers read those unsure of the format's characters."""
        super().__init__(topic)
        self.min_region_confidence = min_region_confidence
        self.voting = voting
        self.min_reads = min_reads
        self.publish_non_plates = publish_non_plates
        self._plate_format_of = plate_format_of
        self._region_of = region_of
        self._on_not_plate = on_not_plate
        self.counts = EngineCounts()
        self._wall_clock = wall_clock
        self._grouper = Grouper(grouping)
        self._holds: dict[int, int] = {}  # id(group) -> the offset it holds

    # --- assignment ------------------------------------------------------------------------

    def assign(self, partition: int, floor: int | None) -> None:
        """Start a partition; `floor`: its committed position (reads below it are a replay)."""
        self.revoke(partition)
        self._start(partition, floor)

    def revoke(self, partition: int) -> int:
        """Forget a partition; its open groups are dropped uncommitted. Returns how many."""
        dropped = self._grouper.forget(partition)
        for group in dropped:
            self._holds.pop(id(group), None)
        self._stop(partition)
        return len(dropped)

    # --- records in, sightings out ----------------------------------------------------------

    def add(self, partition: int, offset: int, observation: Observation | None, now: float) -> list[Outgoing]:
        """One record (None: not a PlateEvent, skipped); `now`: monotonic wall-clock seconds."""
        commits = self._offsets(partition)
        commits.consumed(offset)
        if observation is None:
            return []
        closed, placed = self._grouper.observe(partition, observation, now)
        outgoing = self._finish(closed)
        if not commits.is_replay(offset):
            for _, group in placed:
                if id(group) not in self._holds:
                    self._holds[id(group)] = offset
                    commits.hold(offset)
        return outgoing

    def expire(self, now: float) -> list[Outgoing]:
        """Close the groups of silent cameras."""
        return self._finish(self._grouper.expire(now))

    def _finish(self, closed: list[Closed]) -> list[Outgoing]:
        outgoing = []
        for item in closed:
            group = item.group
            partition = group.key[0]
            commits = self._offsets(partition)
            hold = self._holds.pop(id(group), None)
            if hold is None:  # every read below the floor: published before the restart
                self.counts.replayed += 1
                continue
            if len(group.reads) < self.min_reads:
                self.counts.too_few_reads += 1
                commits.release(hold)
                continue
            rules = self._rules(group)
            sighting = build_sighting(group, item.reason, self.topic, self._wall_clock(), rules)
            if not self._is_plate(sighting, rules) and not self.publish_non_plates:
                self.counts.not_plates += 1
                self._on_not_plate(sighting)
                commits.release(hold)
                continue
            positions = tuple(sorted(read.position for read in group.reads))
            outgoing.append(Outgoing(sighting, partition, hold, commits, positions))
        return outgoing

    def _is_plate(self, sighting: PlateSighting, rules: VotingRules) -> bool:
        if rules.region is not None and sighting.confidence < self.min_region_confidence:
            return False
        return sighting.format_valid

    def _rules(self, group: Group) -> VotingRules:
        plate_format = self._plate_format_of(group.camera_id)
        region = self._region_of(group.camera_id)
        if plate_format is None and region is None:
            return self.voting
        if plate_format is None:
            assert region is not None
            plate_format = region_pattern(region)
        return dataclasses.replace(self.voting, plate_format=plate_format, region=region)

    def delivered(self, outgoing: Outgoing) -> None:
        """The broker acknowledged `outgoing`: its reads no longer hold the commit position."""
        if self._is_current(outgoing.partition, outgoing.commits):
            outgoing.commits.release(outgoing.hold)

    # --- observability ---------------------------------------------------------------------

    def open_groups(self) -> list[Group]:
        return list(self._grouper.open_groups())
