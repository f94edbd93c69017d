"""The composition root of `stream-worker visits`: consume sightings -> pair entries and exits into
visits -> publish visit events -> commit, on one thread.

Guarantees and how they are kept:
- The camera settings (which camera is a site's entry or exit) and the watch list (a plate's or a
  list's overstay limit, limits.py) are read whole before the first sighting, then followed live
  (a change counts from the next visit opened); the visits published by earlier runs are read back whole too
  (history.py), so open visits, their overstays and the sightings already decided survive a restart.
- No visit lost: a chunk's sightings offsets are held (service/offsets.py) until every event they
  decided is acknowledged by the broker, an exit waiting for its entry until it is decided and its
  events acknowledged; only what the broker accepted counts as committed (service/commits.py). A
  crash re-reads the sightings from the last commit.
- No visit duplicated: the state read back already holds what was published before a crash, so a
  sighting read again decides nothing (pairing.py); what a crash cut short between publishing and
  acknowledging may come twice, with the same `event_id` (ids follow from the sightings alone).
- Partitions read unevenly: a chunk's sightings are decided in capture order, and an exit that
  closes no open visit waits up to `--exit-wait-s` for its entry, its offset uncommitted meanwhile.
- Overstays: checked after each chunk against the latest first capture time seen and, with nothing
  to read, against the wall clock, either less `--overstay-grace-s` (an exit still on its way).
- One replica: a site's entry and exit cameras may sit on different partitions, and every open
  visit is in this process's memory. A revoked partition is not committed after, and records
  fetched before their revocation are left to their next owner.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import Consumer, KafkaError

from stream_worker.cameras.following import follow_camera_settings
from stream_worker.contracts import PlateSighting, PlateVisit
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.contracts.watchlist import decode_record as decode_watch_entry
from stream_worker.service import kafka
from stream_worker.service.commits import Committer
from stream_worker.service.compacted import CompactedFollower, CompactedTopicError
from stream_worker.service.consumer import ClientFactory
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.offsets import OffsetBook
from stream_worker.service.plate_consumer import PartitionNumbersCallback, PartitionNumbersConsumer
from stream_worker.service.publisher import OutputRecord, Publisher
from stream_worker.service.records import Decoder, PlateRecord
from stream_worker.visits.history import VisitHistory
from stream_worker.visits.limits import Limits
from stream_worker.visits.metrics import VisitsMetrics
from stream_worker.visits.pairing import SiteCamera, Visits
from stream_worker.visits.settings import VisitsSettings, load_settings

log = logging.getLogger("stream_worker.visits")

CONSUME_CHUNK = 500
POLL_S = 0.2
FLUSH_S = 1.0


class SightingsConsumer(PartitionNumbersConsumer):
    """PlateSightings of `--input-topic`, in the group `--group-id`."""

    def __init__(
        self,
        settings: VisitsSettings,
        metrics: VisitsMetrics,
        on_assign: PartitionNumbersCallback,
        on_revoke: PartitionNumbersCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            settings,
            settings.input_topic,
            settings.group_id,
            metrics,
            on_assign,
            on_revoke,
            on_revoke,
            client,
        )


@dataclass(frozen=True, slots=True)
class HeldExit:
    partition: int
    offset: int
    sighting: PlateSighting
    camera: SiteCamera
    until: float  # monotonic


class VisitsService(LoopService):
    log = log
    started_message = "visits started"
    started_settings = (
        "input_topic",
        "output_topic",
        "cameras_topic",
        "watchlist_topic",
        "list_overstay_s",
        "group_id",
    )

    def __init__(self, settings: VisitsSettings) -> None:
        self.settings = settings
        self.metrics = metrics = VisitsMetrics()
        super().__init__(settings, metrics)
        self.decode: Decoder[PlateSighting] = Decoder.of(
            PlateSighting, settings.input_topic, metrics.sightings_in, metrics.invalid_sightings, log
        )
        self.cameras = follow_camera_settings(
            settings, settings.cameras_topic, self.metrics.camera_settings_skipped.inc
        )
        self.watchlist: CompactedFollower[str, WatchEntry] = CompactedFollower(
            settings.bootstrap_servers,
            settings.watchlist_topic,
            decode_watch_entry,
            settings.kafka_config,
            on_skipped=self.metrics.watchlist_skipped.inc,
            name="watch list",
        )
        self.limits = Limits(settings.list_overstay_s, settings.max_distance)
        self.visits = Visits(
            settings.max_distance, settings.overstay_s or None, settings.remembered, self.limits.of
        )
        self.history = VisitHistory(settings.bootstrap_servers, settings.output_topic, settings.kafka_config)
        self.publisher = Publisher(kafka.producer_config(settings))
        self.book = OffsetBook()
        self.held: list[HeldExit] = []  # exits waiting for their entry, their offsets held
        self.consumer = SightingsConsumer(settings, self.metrics, self._on_assign, self._on_revoke)
        self.committer = Committer(self.consumer, self.book, self.metrics)
        self.closers += [self.cameras.close, self.watchlist.close, self.history.close]
        self._stream_time: datetime | None = None
        self._counted = (0, 0)

    def _turn(self) -> None:
        if not self.cameras.caught_up:
            self.cameras.wait_until_caught_up(POLL_S)
            self.loop_clock.tick()
            return
        if not self.watchlist.loaded:
            self._load_watchlist()
            return
        if self.watchlist.poll():
            self.limits.follow(self.watchlist.values)
        if not self.history.loaded:
            before = self.history.events
            self.history.load(self.visits)
            self.metrics.history_events.inc(self.history.events - before)
            self.loop_clock.tick()
            return
        records = self.consumer.consume(CONSUME_CHUNK, POLL_S)
        chunk = [record for record in records if self.book.owns(self._partition(record))]
        sightings = []
        for record in chunk:
            self.book.consumed(self._partition(record), record.offset, holds=1)
            sighting = self._parse(record)
            if sighting is not None:
                sightings.append((record, sighting))
        events: list[PlateVisit] = []
        now = time.monotonic()
        for record, sighting in sorted(sightings, key=lambda pair: pair[1].first_seen):
            camera = self._camera(sighting)
            decided = self.visits.add(sighting, camera, hold_exit=self.settings.exit_wait_s > 0)
            if decided is None and camera is not None:
                until = now + self.settings.exit_wait_s
                self.held.append(HeldExit(record.partition, record.offset, sighting, camera, until))
                self.book.hold(self._partition(record), record.offset)
            events += decided or []
        decided_exits, retried = self._retry_held(now)
        events += retried
        grace = timedelta(seconds=self.settings.overstay_grace_s)
        if self._stream_time is not None:
            events += self.visits.overstays(self._stream_time - grace)
        if not records:
            events += self.visits.overstays(datetime.now(UTC) - grace)
        if self._publish(events):
            for record in chunk:
                self.book.release(self._partition(record), record.offset)
            for exit_ in decided_exits:
                self.book.release((self.settings.input_topic, exit_.partition), exit_.offset)
            self.committer.commit()
        self._count()
        self.loop_clock.tick()
        self._log_status()

    def _load_watchlist(self) -> None:
        try:
            self.watchlist.load()
        except CompactedTopicError as error:
            log.warning("cannot read the watch list yet, trying again", extra={"error": str(error)})
            time.sleep(POLL_S)
            return
        finally:
            self.loop_clock.tick()
        self.limits.follow(self.watchlist.values)

    def _retry_held(self, now: float) -> tuple[list[HeldExit], list[PlateVisit]]:
        """The held exits again: those whose entry has come since, or whose wait is over, decided
        (their holds released once their events are acknowledged)."""
        events: list[PlateVisit] = []
        still, decided_exits = [], []
        for held in self.held:
            decided = self.visits.add(held.sighting, held.camera, hold_exit=now < held.until)
            if decided is None:
                still.append(held)
            else:
                decided_exits.append(held)
                events += decided
        self.held = still
        return decided_exits, events

    def _partition(self, record: PlateRecord) -> tuple[str, int]:
        return self.settings.input_topic, record.partition

    def _camera(self, sighting: PlateSighting) -> SiteCamera | None:
        settings = self.cameras.settings_for(sighting.camera_id)
        site = settings.site if settings is not None else None
        return SiteCamera(site.name, site.role, site.overstay_s) if site is not None else None

    def _parse(self, record: PlateRecord) -> PlateSighting | None:
        sighting = self.decode(record)
        if sighting is None:
            return None
        if self._stream_time is None or sighting.first_seen > self._stream_time:
            self._stream_time = sighting.first_seen
        return sighting

    def _publish(self, events: list[PlateVisit]) -> bool:
        """Publish and wait until every event is acknowledged (refused ones are published again);
        False when a stop or a fatal error came first (nothing is then committed)."""
        pending = events
        while pending:
            refused: list[PlateVisit] = []
            for event in pending:
                record = OutputRecord(self.settings.output_topic, event.site.encode(), event.to_json())
                self.publisher.publish(record, lambda error, e=event, r=refused: self._delivered(e, error, r))
            while len(self.publisher):
                self.publisher.flush(FLUSH_S)
                if self.fatal is not None or self.stop_requested_at is not None:
                    return False
            pending = refused
        return self.fatal is None

    def _delivered(self, event: PlateVisit, error: KafkaError | None, refused: list[PlateVisit]) -> None:
        if error is None:
            self.metrics.events_out.labels(event.event.value).inc()
            log.info(
                "visit event published",
                extra={
                    "event": event.event.value,
                    "visit_id": event.visit_id,
                    "site": event.site,
                    "plate": event.plate,
                    "dwell_s": event.dwell_s,
                },
            )
            return
        if self._refused(error, "a visit event", event_id=event.event_id):
            refused.append(event)

    def _count(self) -> None:
        unmatched, late = self._counted
        self.metrics.unmatched_exits.inc(self.visits.unmatched_exits - unmatched)
        self.metrics.late_entries.inc(self.visits.late_entries - late)
        self._counted = (self.visits.unmatched_exits, self.visits.late_entries)
        self.metrics.open_visits.set(len(self.visits))

    def _finish(self) -> dict[str, int]:
        undelivered = self.publisher.flush(self.deadlines.drain_left())
        if self.fatal is None:
            self.committer.commit()  # only positions whose events were all acknowledged
        return {"open_visits": len(self.visits), "undelivered_events": undelivered}

    def _on_assign(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.book.assign((self.settings.input_topic, partition))
        log.info(
            "partitions assigned",
            extra={"partitions": [f"{self.settings.input_topic}:{p}" for p in partitions]},
        )

    def _on_revoke(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.book.forget((self.settings.input_topic, partition))
        self.held = [held for held in self.held if held.partition not in partitions]
        log.info("partitions revoked", extra={"partitions": partitions})

    def _status(self) -> dict[str, Any]:
        return {
            "open_visits": len(self.visits),
            "unmatched_exits": self.visits.unmatched_exits,
            "cameras": len(self.cameras.settings),
            "plates_with_limits": len(self.limits),
        }

    def _readiness(self) -> tuple[bool, str]:
        if not self.cameras.caught_up:
            return False, f"reading the camera settings ({self.settings.cameras_topic})"
        if not self.watchlist.loaded:
            return False, f"reading the watch list ({self.settings.watchlist_topic})"
        if not self.history.loaded:
            return False, f"reading the visits history ({self.settings.output_topic})"
        return True, f"{len(self.visits)} open visits"


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker visits`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), VisitsService)
