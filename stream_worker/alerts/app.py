"""The composition root of `stream-worker alerts`: consume plates and sightings -> match the watch
list -> publish alerts -> commit, all on one thread.

Guarantees and how they are kept:
- The watch list is read whole before the first record is matched (not ready until then), then
  followed live each turn (following.py): an entry added or removed counts from the next read.
- One alert per (camera, entry, pass), raised on the pass's first matching read; passes end by
  capture time, so a worker that stalls mid-pass splits none, and an entry alerts a camera again
  only after a cooldown in capture time, also across a restart (passes.py, cooldowns.py).
- A follow-up only where the reads raised none: a sighting (the sightings service's vote over a
  pass) whose voted text or a top candidate matches an entry the pass's reads did not alert for
  publishes one alert with origin `sighting` (sightings.py, which says what can still repeat); a
  sighting that only confirms an alerted pass publishes nothing, also after a restart or when
  another replica alerted it (the alerts topic is read back and followed: history.py). A
  sighting consumed before its reads waits for them (bounded in time and count: the sightings
  topic is paused at `--max-waiting-sightings`).
- At-least-once: a plates offset is committed only below the first read of every pass that is
  open, unacknowledged, or straddles the position (passes.py), a sightings offset only once the
  alerts of its sighting are acknowledged (sightings.py), and only once the broker accepted that
  partition's commit (service/commits.py). A crash re-reads both topics from their commits.
- Recognisable duplicates: an alert's id is the camera, the entry and the position of its pass's
  first matching read, or the sighting's id (alert.py), so an alert published again after a
  restart has the same id.
- Operators' corrections (the compacted corrections topic, its own group): a text corrected to one
  an entry matches, where the text as read did not, publishes one alert with origin `correction`,
  once across restarts and replicas (its id is the sighting's and the entry's; published ids are
  remembered and read back from the alerts topic); its offset is committed once the alert is
  acknowledged (corrections.py).
- Rebalance and SIGTERM/SIGINT: alerts already queued are flushed and committed; open passes are
  dropped uncommitted, and whoever reads the partition next reads them again from their first read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from stream_worker.alerts.cooldowns import Cooldowns
from stream_worker.alerts.corrections import CorrectionAlerts, CorrectionOutgoing, RaisedAlerts
from stream_worker.alerts.following import WatchlistFollower
from stream_worker.alerts.history import AlertHistory, HistoryRules
from stream_worker.alerts.metrics import AlertsMetrics
from stream_worker.alerts.passes import AlertEngine, Outgoing, PassRules
from stream_worker.alerts.recent import RecentPasses
from stream_worker.alerts.settings import AlertsSettings, load_settings
from stream_worker.alerts.sightings import SightingAlerts, SightingOutgoing, SightingRules
from stream_worker.contracts import PlateEvent, PlateSighting
from stream_worker.contracts.corrections import Correction
from stream_worker.service import kafka
from stream_worker.service.commits import Committer
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.plate_consumer import PartitionNumbersCallback, PartitionNumbersConsumer
from stream_worker.service.publisher import OutputRecord, Publisher
from stream_worker.service.records import Decoder, PlateRecord
from stream_worker.watchlists.topic import WatchlistStoreError

log = logging.getLogger("stream_worker.alerts")

CONSUME_CHUNK = 500
POLL_S = 0.1
LOAD_RETRY_S = 2.0


def decode_correction(record: PlateRecord) -> Correction | None:
    """A record of the corrections topic; None for a tombstone (a deleted correction decides nothing)."""
    return None if record.value is None else Correction.model_validate_json(record.value)


class AlertsService(LoopService):
    log = log
    started_message = "alerts started"
    started_settings = (
        "input_topic",
        "output_topic",
        "watchlist_topic",
        "sightings_topic",
        "group_id",
        "sightings_group_id",
        "corrections_topic",
        "corrections_group_id",
    )

    def __init__(self, settings: AlertsSettings) -> None:
        self.settings = settings
        self.metrics = metrics = AlertsMetrics()
        super().__init__(settings, metrics)
        self.decode_event: Decoder[PlateEvent] = Decoder.of(
            PlateEvent, settings.input_topic, metrics.events_in, metrics.invalid_events, log
        )
        self.decode_sighting: Decoder[PlateSighting] = Decoder.of(
            PlateSighting, settings.sightings_topic, metrics.sightings_in, metrics.invalid_sightings, log
        )
        self.decode_correction: Decoder[Correction | None] = Decoder(
            "Correction",
            settings.corrections_topic,
            decode_correction,
            metrics.corrections_in,
            metrics.invalid_corrections,
            log,
        )
        self.recent = RecentPasses(settings.recent_passes, settings.recent_pass_age_s)
        rules = PassRules(
            settings.min_confidence, settings.pass_gap_s, settings.max_pass_s, settings.alert_cooldown_s
        )
        self.cooldowns = Cooldowns(rules.gap_s, rules.cooldown_s, settings.recent_passes)
        self.engine = AlertEngine(
            settings.input_topic,
            rules,
            cooldowns=self.cooldowns,
            on_pass=lambda started, now: self.recent.remember(started.key, started, now),
        )
        self.watchlist = WatchlistFollower(
            settings.bootstrap_servers,
            settings.watchlist_topic,
            settings.default_max_distance,
            settings.kafka_config,
            on_skipped=self.metrics.watchlist_skipped.inc,
        )
        self.publisher = Publisher(kafka.producer_config(settings))
        # Three groups, each from its committed position: a commit never passes a record whose
        # alerts are unacknowledged (passes.py, sightings.py, corrections.py).
        self.consumer = PartitionNumbersConsumer(
            settings,
            settings.input_topic,
            settings.group_id,
            metrics,
            self._on_assign,
            self._on_revoke,
            self._on_lost,
        )
        self.committer = Committer(self.consumer, self.engine, self.metrics)
        self.corrections = CorrectionAlerts(
            settings.corrections_topic,
            settings.correction_max_age_s,
            RaisedAlerts(settings.recent_passes),
        )
        self.history = AlertHistory(
            settings.bootstrap_servers,
            settings.output_topic,
            HistoryRules(settings.input_topic, settings.recent_pass_age_s),
            settings.history_alerts,
            settings.kafka_config,
            on_alert=self.cooldowns.alerted,
            on_correction=self.corrections.raised.add,
            on_sighting_alert=self.cooldowns.alerted_sighting,
        )
        self.sightings = SightingAlerts(
            settings.sightings_topic,
            SightingRules(
                settings.input_topic,
                settings.sighting_candidates,
                settings.min_confidence,
                settings.sighting_wait_s,
            ),
            self.recent,
            self.engine.reads_to_come,
            cooldowns=self.cooldowns,
        )
        # Its own group: its rebalances and lag are its own, apart from the plates topic's.
        self.sightings_consumer = PartitionNumbersConsumer(
            settings,
            settings.sightings_topic,
            settings.sightings_group_id,
            metrics,
            *self._rebalance_callbacks(
                "sightings", settings.sightings_topic, self.sightings, lambda: self.sightings_committer
            ),
        )
        self.sightings_committer = Committer(self.sightings_consumer, self.sightings, self.metrics)
        self.corrections_consumer = PartitionNumbersConsumer(
            settings,
            settings.corrections_topic,
            settings.corrections_group_id,
            metrics,
            *self._rebalance_callbacks(
                "corrections",
                settings.corrections_topic,
                self.corrections,
                lambda: self.corrections_committer,
            ),
        )
        self.corrections_committer = Committer(self.corrections_consumer, self.corrections, self.metrics)
        self.groups["sightings group"] = self.sightings_consumer
        self.groups["corrections group"] = self.corrections_consumer
        self.closers += [self.watchlist.close, self.history.close]

    # --- lifecycle -------------------------------------------------------------------------

    def _turn(self) -> None:
        if not self.watchlist.loaded:
            self._load_watchlist()
            return
        if not self.history.loaded:
            self._load_history()
            return
        applied = self.watchlist.changes
        self.watchlist.poll()
        self.metrics.history_remembered.inc(self.history.poll(self.recent))
        self.metrics.watchlist_changes.inc(self.watchlist.changes - applied)
        self.metrics.watchlist_size.set(len(self.watchlist.entries))
        for record in self.consumer.consume(CONSUME_CHUNK, POLL_S):
            self._accept(record)
        # Sightings after the plates: a sighting's reads are usually consumed before it is; one
        # whose reads are still to come waits for them (sightings.py).
        for record in self.sightings_consumer.consume(CONSUME_CHUNK, 0):
            self._accept_sighting(record)
        self._decide_waiting_sightings()
        for record in self.corrections_consumer.consume(CONSUME_CHUNK, 0):
            self._accept_correction(record)
        self._pump()

    def _load_watchlist(self) -> None:
        try:
            self.watchlist.load()
        except WatchlistStoreError as error:
            log.warning("cannot read the watch list yet, trying again", extra={"error": str(error)})
            time.sleep(LOAD_RETRY_S)
        self.metrics.watchlist_size.set(len(self.watchlist.entries))
        self.loop_clock.tick()

    def _load_history(self) -> None:
        """Before the first record: what earlier runs and other replicas alerted (history.py)."""
        self.history.load(self.recent)
        self.metrics.history_remembered.inc(self.history.remembered)
        self.loop_clock.tick()

    def _finish(self) -> dict[str, int]:
        undelivered = self.publisher.flush(self.deadlines.drain_left())
        self.publisher.poll(0)
        self.committer.commit()
        self.sightings_committer.commit()
        self.corrections_committer.commit()
        return {"open_passes_left_uncommitted": self.engine.open_passes(), "undelivered_alerts": undelivered}

    # --- the pipeline ----------------------------------------------------------------------

    def _accept(self, record: PlateRecord) -> None:
        if record.partition not in self.engine.assigned():
            return  # fetched before a revocation: its next owner reads it
        event = self.decode_event(record)
        matcher = self.watchlist.matcher
        now = time.monotonic()
        for outgoing in self.engine.add(record.partition, record.offset, event, matcher, now):
            self._publish(outgoing, event.processed_at if event else datetime.now(UTC))

    def _accept_sighting(self, record: PlateRecord) -> None:
        if record.partition not in self.sightings.assigned():
            return  # fetched before a revocation: its next owner reads it
        sighting = self.decode_sighting(record)
        confirmed, cooled = self.sightings.confirmed, self.sightings.cooled
        matcher = self.watchlist.matcher
        outgoing = self.sightings.add(record.partition, record.offset, sighting, matcher, time.monotonic())
        self.metrics.sightings_confirmed.inc(self.sightings.confirmed - confirmed)
        self.metrics.sightings_cooled.inc(self.sightings.cooled - cooled)
        for alert in outgoing:
            self._publish(alert, alert.closed_at)

    def _accept_correction(self, record: PlateRecord) -> None:
        if record.partition not in self.corrections.assigned():
            return  # fetched before a revocation: its next owner reads it
        correction = self.decode_correction(record)
        already = self.corrections.already_raised
        outgoing = self.corrections.add(record.partition, record.offset, correction, self.watchlist.matcher)
        self.metrics.corrections_already_alerted.inc(self.corrections.already_raised - already)
        for alert in outgoing:
            self._publish(alert, alert.corrected_at)

    def _decide_waiting_sightings(self) -> None:
        confirmed, waited_out = self.sightings.confirmed, self.sightings.waited_out
        cooled = self.sightings.cooled
        for alert in self.sightings.ready(self.watchlist.matcher, time.monotonic()):
            self._publish(alert, alert.closed_at)
        self.metrics.sightings_confirmed.inc(self.sightings.confirmed - confirmed)
        self.metrics.sightings_cooled.inc(self.sightings.cooled - cooled)
        self.metrics.sightings_waited_out.inc(self.sightings.waited_out - waited_out)
        self.metrics.sightings_waiting.set(self.sightings.waiting)
        self.sightings_consumer.throttle(self.sightings.waiting, self.settings.max_waiting_sightings)

    def _pump(self) -> None:
        self.engine.expire(time.monotonic())
        self.publisher.poll(0)
        self.committer.commit()
        self.sightings_committer.commit()
        self.corrections_committer.commit()
        self.metrics.open_passes.set(self.engine.open_passes())
        self.metrics.held.set(self.engine.held())
        self.metrics.sightings_held.set(self.sightings.held())
        self.metrics.recent_passes.set(len(self.recent))
        self.loop_clock.tick()
        self._log_status()

    def _publish(
        self, outgoing: Outgoing | SightingOutgoing | CorrectionOutgoing, processed_at: datetime
    ) -> None:
        alert = outgoing.alert
        record = OutputRecord(self.settings.output_topic, alert.camera_id.encode(), alert.to_json())
        self.publisher.publish(record, lambda error: self._delivered(outgoing, processed_at, error))

    def _delivered(
        self,
        outgoing: Outgoing | SightingOutgoing | CorrectionOutgoing,
        processed_at: datetime,
        error: KafkaError | None,
    ) -> None:
        """`processed_at`: when the input was built (the read's PlateEvent, the sighting's closing,
        the correction's saving)."""
        alert = outgoing.alert
        book: AlertEngine | SightingAlerts | CorrectionAlerts = self.engine
        if isinstance(outgoing, SightingOutgoing):
            book = self.sightings
        elif isinstance(outgoing, CorrectionOutgoing):
            book = self.corrections
        if error is None:
            book.delivered(outgoing)  # type: ignore[arg-type]
            self.metrics.alerts_out.labels(alert.list, alert.match_kind.value, alert.origin.value).inc()
            self.metrics.latency.observe(max(0.0, (datetime.now(UTC) - processed_at).total_seconds()))
            log.info(
                "alert published",
                extra={
                    "alert_id": alert.alert_id,
                    "camera_id": alert.camera_id,
                    "plate": alert.plate,
                    "list": alert.list,
                    "candidate": alert.candidate,
                    "distance": alert.distance,
                    "origin": alert.origin.value,
                },
            )
            return
        refused = self._refused(error, "an alert", alert_id=alert.alert_id)
        if refused and book.is_current(outgoing):  # type: ignore[arg-type]
            self._publish(outgoing, processed_at)

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, partitions: list[int]) -> None:
        committed = self._committed_plates(partitions)
        for partition in partitions:
            self.engine.assign(partition, committed.get(partition))
        log.info(
            "partitions assigned",
            extra={"partitions": [f"{self.settings.input_topic}:{p}" for p in partitions]},
        )

    def _committed_plates(self, partitions: list[int]) -> dict[int, int]:
        """The plates group's committed positions: a sighting whose reads lie below one is decided
        at once after a restart instead of waiting for reads that will not come again."""
        topic = self.settings.input_topic
        try:
            found = self.consumer.committed([(topic, p) for p in partitions])
        except KafkaException as error:
            log.warning(
                "cannot read the committed plates positions; sightings wait for their reads",
                extra={"error": str(error)},
            )
            return {}
        return {partition: offset for (_, partition), offset in found.items()}

    def _on_revoke(self, partitions: list[int]) -> None:
        self._flush_and_commit(self.publisher, self.committer)
        dropped = sum(self.engine.revoke(p) for p in partitions)
        log.info("partitions revoked", extra={"partitions": partitions, "open_passes_dropped": dropped})

    def _on_lost(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.engine.revoke(partition)
        log.warning("partitions lost", extra={"partitions": partitions})

    def _rebalance_callbacks(
        self,
        name: str,
        topic: str,
        book: SightingAlerts | CorrectionAlerts,
        committer: Callable[[], Committer],
    ) -> tuple[PartitionNumbersCallback, PartitionNumbersCallback, PartitionNumbersCallback]:
        """on_assign, on_revoke and on_lost of the sightings' or the corrections' group: what their
        alerts hold is theirs, so only their own `committer()` (built after the group) commits on a
        revocation."""

        def on_assign(partitions: list[int]) -> None:
            for partition in partitions:
                book.assign(partition)
            log.info(
                f"{name} partitions assigned", extra={"partitions": [f"{topic}:{p}" for p in partitions]}
            )

        def on_revoke(partitions: list[int]) -> None:
            self._flush_and_commit(self.publisher, committer())
            unacknowledged = sum(book.revoke(p) for p in partitions)
            log.info(
                f"{name} partitions revoked",
                extra={"partitions": partitions, "unacknowledged_alerts": unacknowledged},
            )

        def on_lost(partitions: list[int]) -> None:
            for partition in partitions:
                book.revoke(partition)
            log.warning(f"{name} partitions lost", extra={"partitions": partitions})

        return on_assign, on_revoke, on_lost

    # --- observability ---------------------------------------------------------------------

    def _status(self) -> dict[str, Any]:
        return {
            "watchlist_entries": len(self.watchlist.entries),
            "open_passes": self.engine.open_passes(),
            "held": self.engine.held(),
            "sightings_held": self.sightings.held(),
            "sightings_waiting": self.sightings.waiting,
            "recent_passes": len(self.recent),
            "unacked_alerts": len(self.publisher),
            "assigned": self.engine.assigned(),
            "sightings_assigned": self.sightings.assigned(),
        }

    def _readiness(self) -> tuple[bool, str]:
        if not self.watchlist.loaded:
            return False, "watch list not loaded yet"
        if not self.history.loaded:
            return False, "alerts history not read yet"
        assigned = self.engine.assigned()
        if not assigned:
            return False, "no partitions assigned"
        return (
            True,
            f"watch list of {len(self.watchlist.entries)} entries, {len(assigned)} partitions assigned",
        )


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker alerts`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), AlertsService)
