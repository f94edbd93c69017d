"""The composition root of `stream-worker notify`: consume alerts (sightings, visits) -> decide per
target (rules.py) -> deliver on each target's lane (lanes.py; webhook.py, mqtt.py, mail.py) -> commit, the
Kafka side on one thread.

Guarantees and how they are kept:
- The targets and the allow lists are read whole before the first event is decided (not ready
  until then), then followed live each turn: a target added, changed or removed counts from the
  next event; a removed (or disabled, or retyped) target's queued deliveries are dropped, counted.
- Alerts go to the targets without allow lists; each sighting goes, as an unknown_vehicle event,
  to the targets with allow lists whose rules it passes and whose allow lists its plate (voted
  text or a top candidate, within --allow-max-distance) is on none of, or as an allowed_vehicle
  event to those asking for the plates on them (`vehicles: allowed`, a gate opener). The
  sightings topic is read in a group of its own and committed the same way as the alerts topic.
- Overstays: the visits topic, in a group of its own too; its `overstay` events go, as overstay
  events, to the targets asking for them (`overstays: also` or `only`) whose rules they pass, with
  the same signing, retries, held deliveries and DLQ as alerts; its other events are passed over.
- At-least-once: an event's offset is committed only once each of its deliveries is settled: the
  target acknowledged it, or it is in `--dlq-topic` (acknowledged by the broker) after the retry
  budget or a final refusal (service/offsets.py). A crash re-reads from the commit and delivers again,
  with the same `X-Stream-Worker-Event`.
- A dead or slow target delays only its own lane; the others go on. Deliveries not settled are
  bounded by `--max-pending` (reading pauses), which a dead target reaches only if events come
  faster than `max-pending / retry-budget-s`.
- Secrets: only the target secrets (secrets.py: the secrets file, read again when it changes, and
  STREAM_WORKER_SECRET_* variables), resolved in webhook.py, mqtt.py and mail.py only; errors are
  redacted there before they reach a log line, a metric (never: targets are labelled by name) or a
  DLQ header. A delivery whose secret is missing is held (lanes.py), never dead-lettered for it.
- The delivery log: each outcome (sent, retried, failed, dropped) is one NotifyDelivery record on
  `--deliveries-topic`, keyed by target, published best effort (a lost log line loses no alert).
- "Send a test" (the console): a new NotifyTest on the compacted `--tests-topic` for a target is one
  test alert (trial.py) on that target's lane, past its rules and cooldown; it holds back no
  offset and is never dead-lettered, only logged. Requests made while the service was down are
  not sent when it starts (read as the baseline).
- Replays (`notify dlq replay`, replays.py): each record of `--replays-topic` is its dead letter
  sent again to its target's lane, same event id, past its rules; it holds back no offset (the
  dead letter stays in the DLQ) and one that fails again is dead-lettered again.
- Rebalance and SIGTERM/SIGINT: what settles within the drain time is committed; the rest is
  left uncommitted and delivered again by whoever reads the partition next.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from stream_worker.contracts import PlateAlert, PlateSighting, PlateVisit, VisitEventKind
from stream_worker.contracts.frames import DeadLetterHeader
from stream_worker.contracts.notify import (
    STATUS_KEY,
    DeliveryOutcome,
    NotifyDelivery,
    NotifyStatus,
    NotifyTarget,
    NotifyTest,
    TargetType,
    decode_record,
)
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.contracts.watchlist import decode_record as decode_watch_entry
from stream_worker.notify.lanes import Backoff, Delivery, Lane, Outcome, Sender
from stream_worker.notify.mail import MailSender
from stream_worker.notify.metrics import NotifyMetrics
from stream_worker.notify.mqtt import MqttSender
from stream_worker.notify.pictures import alert_picture_url, sighting_picture_url, with_picture_url
from stream_worker.notify.replays import EVENT_HEADER as REPLAY_EVENT_HEADER
from stream_worker.notify.replays import KIND_HEADER as REPLAY_KIND_HEADER
from stream_worker.notify.replays import ensure_topic as ensure_replays_topic
from stream_worker.notify.replays import read_dead_letters
from stream_worker.notify.rules import (
    Cooldown,
    EventKind,
    Facts,
    Source,
    alert_facts,
    event_for,
    overstay_facts,
    sighting_facts,
    source_of,
)
from stream_worker.notify.secrets import Secrets
from stream_worker.notify.settings import NotifySettings, load_settings
from stream_worker.notify.trial import decode_test, trial_alert
from stream_worker.notify.webhook import WebhookSender
from stream_worker.plates.matching import Matcher
from stream_worker.service import kafka
from stream_worker.service.commits import Committer
from stream_worker.service.compacted import CompactedFollower, CompactedTopicError, write_compacted
from stream_worker.service.kafka import Partition
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.offsets import OffsetBook
from stream_worker.service.plate_consumer import PartitionNumbersConsumer
from stream_worker.service.publisher import OutputRecord, Publisher
from stream_worker.service.records import Decoder, PlateRecord

log = logging.getLogger("stream_worker.notify")

CONSUME_CHUNK = 500
POLL_S = 0.05
LOAD_RETRY_S = 2.0
LANE_JOIN_S = 1.0
TARGET_HEADER = "notify.target"
KIND_HEADER = "notify.kind"
ATTEMPTS_HEADER = "notify.attempts"
STATUS_HEADER = "notify.status"
TOP_CANDIDATES = 3  # a sighting's best texts matched against the allow lists (its voted text too)
STATUS_CHECK_S = 1.0  # how often the secrets' names are compared with those last published


@dataclass
class Input:
    """One consumed topic: its consumer, its decoder, what may be committed, and the committer."""

    source: Source
    topic: str
    consumer: PartitionNumbersConsumer
    decode: Decoder[Any]
    book: OffsetBook
    committer: Committer

    def partition(self, number: int) -> Partition:
        return self.topic, number

    def assigned(self) -> list[int]:
        return [number for _, number in self.book.assigned()]


class NotifyService(LoopService):
    log = log
    started_message = "notify started"
    started_settings = (
        "input_topic",
        "sightings_topic",
        "visits_topic",
        "watchlist_topic",
        "targets_topic",
        "dlq_topic",
        "deliveries_topic",
        "tests_topic",
        "status_topic",
        "replays_topic",
        "group_id",
        "sightings_group_id",
        "visits_group_id",
        "allow_private_targets",
    )

    def __init__(self, settings: NotifySettings) -> None:
        self.settings = settings
        self.metrics = NotifyMetrics()
        super().__init__(settings, self.metrics)
        self.secrets = Secrets(settings.secrets_file)
        self.targets: CompactedFollower[str, NotifyTarget] = CompactedFollower(
            settings.bootstrap_servers,
            settings.targets_topic,
            decode_record,
            settings.kafka_config,
            on_skipped=self.metrics.targets_skipped.inc,
            name="notify targets",
        )
        self.watchlist: CompactedFollower[str, WatchEntry] = CompactedFollower(
            settings.bootstrap_servers,
            settings.watchlist_topic,
            decode_watch_entry,
            settings.kafka_config,
            name="allow lists",
        )
        self.trials: CompactedFollower[str, NotifyTest] = CompactedFollower(
            settings.bootstrap_servers,
            settings.tests_topic,
            decode_test,
            settings.kafka_config,
            name="test requests",
        )
        self.trials_sent: dict[str, str] = {}  # target -> the last test_id seen (sent or baseline)
        self.replays = Consumer(
            {
                **kafka.consumer_config(settings, f"{settings.group_id}-replays"),
                "auto.offset.reset": "earliest",
            }
        )
        self.replays_subscribed = False
        self.replays_tried_at = float("-inf")
        # (names, problem, dead letters) as last published; the dead letters per target, counted
        # from the DLQ when the service starts, then as it dead-letters.
        self.status_said: tuple[tuple[str, ...], str | None, tuple[tuple[str, int], ...]] | None = None
        self.dead_letters: Counter[str] | None = None
        self.status_checked_at = float("-inf")
        self.allowed = Matcher({}, settings.allow_max_distance, WatchKind.ALLOW)
        self.backoff = Backoff(settings.initial_backoff_s, settings.max_backoff_s)
        self.outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.lanes: dict[str, Lane] = {}
        self.cooldown = Cooldown()
        self.publisher = Publisher(kafka.producer_config(settings))
        metrics = self.metrics
        alerts = Decoder.of(PlateAlert, settings.input_topic, metrics.alerts_in, metrics.invalid_alerts, log)
        self.alerts = self._input(Source.ALERTS, settings.input_topic, settings.group_id, alerts)
        self.consumer = self.alerts.consumer  # the group LoopService leaves at the end
        sightings = Decoder.of(
            PlateSighting, settings.sightings_topic, metrics.sightings_in, metrics.invalid_sightings, log
        )
        self.sightings = self._input(
            Source.SIGHTINGS, settings.sightings_topic, settings.sightings_group_id, sightings
        )
        visits = Decoder.of(PlateVisit, settings.visits_topic, metrics.visits_in, metrics.invalid_visits, log)
        self.visits = self._input(Source.VISITS, settings.visits_topic, settings.visits_group_id, visits)
        self.inputs = {source.source: source for source in (self.alerts, self.sightings, self.visits)}
        self.groups.update(
            {
                "sightings group": self.sightings.consumer,
                "visits group": self.visits.consumer,
                "replays group": self.replays,
            }
        )
        self.closers += [self.targets.close, self.watchlist.close, self.trials.close]

    def _input(self, kind: Source, topic: str, group_id: str, decode: Decoder[Any]) -> Input:
        book = OffsetBook()
        consumer = PartitionNumbersConsumer(
            self.settings,
            topic,
            group_id,
            self.metrics,
            lambda partitions: self._on_assign(kind, partitions),
            lambda partitions: self._on_revoke(kind, partitions),
            lambda partitions: self._on_lost(kind, partitions),
        )
        return Input(kind, topic, consumer, decode, book, Committer(consumer, book, self.metrics))

    # --- lifecycle -------------------------------------------------------------------------

    def _started_fields(self) -> dict[str, Any]:
        return {
            **super()._started_fields(),
            "secrets_file": str(self.settings.secrets_file) if self.settings.secrets_file else None,
            "secret_names": self.secrets.names(),
        }

    def _turn(self) -> None:
        if not self.targets.loaded:
            self._load(self.targets, self._follow_targets)
            return
        if not self.watchlist.loaded:
            self._load(self.watchlist, self._follow_watchlist)
            return
        if not self.trials.loaded:
            self._load(self.trials, self._baseline_trials)
            return
        self._say_status()
        if self.targets.poll():
            self._follow_targets()
        if self.watchlist.poll():
            self._follow_watchlist()
        if self.trials.poll():
            self._send_trials()
        self._take_replays()
        for record in self.alerts.consumer.consume(CONSUME_CHUNK, POLL_S):
            self._accept_alert(record)
        for record in self.sightings.consumer.consume(CONSUME_CHUNK, 0):
            self._accept_sighting(record)
        for record in self.visits.consumer.consume(CONSUME_CHUNK, 0):
            self._accept_visit(record)
        self._settle_outcomes()
        self.publisher.poll(0)
        pending = 0
        for source in self.inputs.values():
            source.committer.commit()
            pending += source.book.held()
        for source in self.inputs.values():
            source.consumer.throttle(pending, self.settings.max_pending)
        self._observe(pending)

    def _load(self, follower: CompactedFollower[str, Any], then: Callable[[], None]) -> None:
        try:
            follower.load()
        except CompactedTopicError as error:
            log.warning(f"cannot read the {follower.name} yet, trying again", extra={"error": str(error)})
            time.sleep(LOAD_RETRY_S)
            return
        finally:
            self.loop_clock.tick()
        then()

    def _pending(self) -> int:
        return sum(source.book.held() for source in self.inputs.values())

    def _finish(self) -> dict[str, int]:
        if self.fatal is None:
            for source in self.inputs.values():
                source.consumer.pause_all()
            while self._pending() and self.deadlines.drain_left() > 0:
                self._settle_outcomes(wait_s=min(0.1, self.deadlines.drain_left()))
                self.publisher.poll(0)
        for lane in self.lanes.values():
            lane.stop(discard=False)
        for lane in self.lanes.values():
            lane.join(LANE_JOIN_S)
        self._settle_outcomes()
        undelivered = self.publisher.flush(self.deadlines.final_flush_left())
        if self.fatal is None:
            for source in self.inputs.values():
                source.committer.commit()
        return {
            "unsettled_deliveries_left_uncommitted": self._pending(),
            "undelivered_dead_letters": undelivered,
        }

    # --- targets and allow lists -----------------------------------------------------------

    def _follow_targets(self) -> None:
        """One lane per enabled target: new ones started, changed ones updated, gone ones stopped."""
        enabled = {name: target for name, target in self.targets.values.items() if target.enabled}
        gone = [
            name
            for name, lane in self.lanes.items()
            if name not in enabled or enabled[name].type != lane.target.type
        ]
        for name in gone:
            self.lanes.pop(name).stop(discard=True)
            with contextlib.suppress(KeyError):
                self.metrics.queued.remove(name)
            log.info(
                "target removed, disabled or retyped: its queued deliveries are dropped",
                extra={"target": name},
            )
        for name, target in enabled.items():
            lane = self.lanes.get(name)
            if lane is None:
                self.metrics.show_target(name)
                self.lanes[name] = Lane(
                    name, target, self._sender(name, target), self.backoff, self.outcomes, self._count_retry
                ).start()
                log.info("target added", extra={"target": name, "type": target.type.value})
            elif lane.target != target:
                lane.target = target
                log.info("target changed", extra={"target": name})
        self.metrics.targets.set(len(self.lanes))

    def _follow_watchlist(self) -> None:
        self.allowed = Matcher(self.watchlist.values, self.settings.allow_max_distance, WatchKind.ALLOW)

    def _baseline_trials(self) -> None:
        self.trials_sent = {name: test.test_id for name, test in self.trials.values.items()}

    def _send_trials(self) -> None:
        """A test alert for each target with a test_id not seen yet (and a lane: enabled)."""
        for name, test in self.trials.values.items():
            if self.trials_sent.get(name) == test.test_id:
                continue
            self.trials_sent[name] = test.test_id
            lane = self.lanes.get(name)
            if lane is None:
                log.info("test requested for a target that is absent or disabled", extra={"target": name})
                continue
            alert = trial_alert(test)
            lane.put(
                Delivery(
                    EventKind.ALERT,
                    name,
                    alert.alert_id,
                    alert.to_json(),
                    0,
                    0,
                    0,
                    alert.alerted_at,
                    time.monotonic() + self.settings.retry_budget_s,
                    trial=True,
                )
            )
            log.info("test alert queued", extra={"target": name, "event_id": alert.alert_id})

    def _take_replays(self) -> None:
        """Each new replay request (a dead letter to send again) onto its target's lane."""
        if not self.replays_subscribed:
            if not self._replays_due():
                return
            try:
                ensure_replays_topic(
                    self.settings.bootstrap_servers,
                    self.settings.replays_topic,
                    self.settings.kafka_config,
                    10.0,
                )
            except (CompactedTopicError, KafkaException) as error:
                log.warning("cannot read the replays topic yet", extra={"error": str(error)})
                return
            finally:
                self.loop_clock.tick()
            self.replays.subscribe([self.settings.replays_topic])
            self.replays_subscribed = True
        messages = self.replays.consume(100, 0)
        for message in messages:
            if message.error() is None:
                self._replay(message)
        if messages:
            self.replays.commit(asynchronous=True)

    def _replays_due(self) -> bool:
        now = time.monotonic()
        if now - self.replays_tried_at < LOAD_RETRY_S:
            return False
        self.replays_tried_at = now
        return True

    def _replay(self, message: Message) -> None:
        name = (message.key() or b"").decode("utf-8", "replace")
        headers = dict(message.headers() or ())
        event_id = (headers.get(REPLAY_EVENT_HEADER) or b"").decode("utf-8", "replace")
        try:
            kind = EventKind((headers.get(REPLAY_KIND_HEADER) or b"").decode("utf-8", "replace"))
        except ValueError:
            log.warning("skipped a replay that names no event kind", extra={"target": name})
            return
        lane = self.lanes.get(name)
        if lane is None or not event_id:
            log.warning("replay for a target that is absent or disabled: not sent", extra={"target": name})
            return
        now = datetime.now(UTC)
        deadline = time.monotonic() + self.settings.retry_budget_s
        lane.put(Delivery(kind, name, event_id, message.value() or b"", 0, 0, 0, now, deadline, replay=True))
        log.info("dead letter replayed", extra={"target": name, "event_id": event_id, "kind": kind.value})

    def _sender(self, name: str, target: NotifyTarget) -> Sender:
        """The lane's own sender (its own connections: a hanging target holds none of another's)."""
        allow_private, ca_file = self.settings.allow_private_targets, self.settings.ca_file
        if target.type is TargetType.MQTT:
            return MqttSender(name, allow_private, ca_file, self.secrets)
        if target.type is TargetType.EMAIL:
            return MailSender(allow_private, ca_file, self.secrets)
        return WebhookSender(allow_private, ca_file, self.secrets)

    def _say_status(self) -> None:
        """Publish the names of the target secrets (never a value) when they changed; a write the
        broker refuses is tried again on the next check."""
        now = time.monotonic()
        if now - self.status_checked_at < STATUS_CHECK_S:
            return
        self.status_checked_at = now
        if self.dead_letters is None:
            self.dead_letters = self._count_dead_letters()
        counts = tuple(sorted(self.dead_letters.items()))
        said = (tuple(self.secrets.names()), self.secrets.problem, counts)
        if said == self.status_said:
            return
        status = NotifyStatus(
            secrets=said[0], secrets_problem=said[1], dead_letters=dict(counts), at=datetime.now(UTC)
        )
        try:
            write_compacted(
                self.settings.bootstrap_servers,
                self.settings.status_topic,
                [(STATUS_KEY.encode(), status.to_json())],
                self.settings.kafka_config,
            )
        except (CompactedTopicError, KafkaException) as error:
            log.warning("cannot publish the secrets' names yet", extra={"error": str(error)})
            return
        finally:
            self.loop_clock.tick()
        if said[:2] != (self.status_said or ((), None))[:2]:
            log.info("target secrets", extra={"names": list(said[0]), "problem": said[1]})
        self.status_said = said

    def _count_dead_letters(self) -> Counter[str]:
        """The dead letters per target on the DLQ now (read once, at the start)."""
        try:
            letters = read_dead_letters(
                self.settings.bootstrap_servers, self.settings.dlq_topic, self.settings.kafka_config, 30.0
            )
        except (CompactedTopicError, KafkaException) as error:
            log.warning("cannot count the dead letters: counting from now", extra={"error": str(error)})
            return Counter()
        finally:
            self.loop_clock.tick()
        return Counter(letter.target for letter in letters if letter.target)

    def _count_retry(self, name: str) -> None:
        self.metrics.retried.labels(name).inc()

    # --- the pipeline ----------------------------------------------------------------------

    def _accept_alert(self, record: PlateRecord) -> None:
        if not self.alerts.book.owns(self.alerts.partition(record.partition)):
            return  # fetched before a revocation: its next owner reads it
        alert = self.alerts.decode(record)
        if alert is None:
            self._skip(self.alerts, record)
            return
        body = with_picture_url(alert.to_json(), alert_picture_url(self.settings.console_url, alert))
        self._route(self.alerts, record, alert_facts(alert), body, alert.alerted_at, ())

    def _accept_sighting(self, record: PlateRecord) -> None:
        if not self.sightings.book.owns(self.sightings.partition(record.partition)):
            return
        sighting = self.sightings.decode(record)
        if sighting is None:
            self._skip(self.sightings, record)
            return
        facts = sighting_facts(sighting)
        texts = [sighting.text, *(c.text for c in sighting.candidates[:TOP_CANDIDATES])]
        allowed = {match.entry.list for match in self.allowed.match(texts, datetime.now(UTC))}
        url = sighting_picture_url(self.settings.console_url, sighting)
        self._route(
            self.sightings,
            record,
            facts,
            with_picture_url(sighting.to_json(), url),
            sighting.closed_at,
            allowed,
        )

    def _accept_visit(self, record: PlateRecord) -> None:
        """An overstay event to the targets asking for it; any other visit event is passed over."""
        if not self.visits.book.owns(self.visits.partition(record.partition)):
            return
        visit = self.visits.decode(record)
        if visit is None or visit.event is not VisitEventKind.OVERSTAY:
            self._skip(self.visits, record)
            return
        self._route(self.visits, record, overstay_facts(visit), visit.to_json(), datetime.now(UTC), ())

    def _skip(self, source: Input, record: PlateRecord) -> None:
        """A record that is not its topic's contract (decoded as None, counted, logged), or one that
        asks for no delivery: consumed."""
        source.book.consumed(source.partition(record.partition), record.offset)

    def _route(
        self,
        source: Input,
        record: PlateRecord,
        facts: Facts,
        body: bytes,
        made_at: datetime,
        allowed_lists: set[str] | tuple[()],
    ) -> None:
        """One delivery per target that wants the event; the offset waits for all of them."""
        epoch = source.consumer.epoch((source.topic, record.partition))
        deadline = time.monotonic() + self.settings.retry_budget_s
        chosen = []
        for name, lane in self.lanes.items():
            kind = event_for(lane.target.rules, source.source, facts, allowed_lists)
            if kind is not None and self.cooldown.admit(name, lane.target.rules.cooldown_s, facts, kind):
                chosen.append((name, lane, kind))
        source.book.consumed(source.partition(record.partition), record.offset, holds=len(chosen))
        for name, lane, kind in chosen:
            lane.put(
                Delivery(
                    kind,
                    name,
                    facts.event_id,
                    body,
                    record.partition,
                    record.offset,
                    epoch,
                    made_at,
                    deadline,
                )
            )

    def _settle_outcomes(self, wait_s: float = 0.0) -> None:
        try:
            outcome = self.outcomes.get(timeout=wait_s) if wait_s > 0 else self.outcomes.get_nowait()
        except queue.Empty:
            return
        while True:
            self._settle(outcome)
            try:
                outcome = self.outcomes.get_nowait()
            except queue.Empty:
                return

    def _settle(self, outcome: Outcome) -> None:
        delivery = outcome.delivery
        if outcome.retrying:
            if outcome.held:
                self.metrics.held.labels(delivery.target).inc()
            self._log_delivery(outcome, DeliveryOutcome.HELD if outcome.held else DeliveryOutcome.RETRIED)
            return
        if delivery.trial:
            self._settle_trial(outcome)
            return
        source = self.inputs[source_of(delivery.kind)]
        if not delivery.replay and not self._current(delivery):
            return  # its partition was revoked meanwhile: whoever owns it now delivers it again
        if outcome.ok:
            self.metrics.sent.labels(delivery.target).inc()
            self.metrics.latency.labels(delivery.target).observe(outcome.seconds)
            if not delivery.replay:
                source.book.release(source.partition(delivery.partition), delivery.offset)
            self._log_delivery(outcome, DeliveryOutcome.SENT)
        elif outcome.dropped:
            self.metrics.dropped.labels(delivery.target).inc()
            if not delivery.replay:
                source.book.release(source.partition(delivery.partition), delivery.offset)
            self._log_delivery(outcome, DeliveryOutcome.DROPPED)
        else:
            log.warning(
                "delivery given up: publishing it to the DLQ",
                extra={
                    "target": delivery.target,
                    "kind": delivery.kind.value,
                    "event_id": delivery.event_id,
                    "attempts": delivery.attempts,
                    "status": outcome.status,
                    "error": outcome.error,
                },
            )
            self._dead_letter(outcome)

    def _settle_trial(self, outcome: Outcome) -> None:
        if outcome.ok:
            result = DeliveryOutcome.SENT
        else:
            result = DeliveryOutcome.DROPPED if outcome.dropped else DeliveryOutcome.FAILED
        self._log_delivery(outcome, result)

    def _log_delivery(self, outcome: Outcome, result: DeliveryOutcome) -> None:
        """One line of the delivery log (best effort: a line the broker refuses is only counted)."""
        delivery = outcome.delivery
        record = NotifyDelivery(
            target=delivery.target,
            event_id=delivery.event_id,
            kind="test" if delivery.trial else delivery.kind.value,
            outcome=result,
            attempts=delivery.attempts,
            status=outcome.status,
            error=(outcome.error or "")[:1024] or None,
            at=datetime.now(UTC),
        )
        output = OutputRecord(self.settings.deliveries_topic, delivery.target.encode(), record.to_json())
        try:
            self.publisher.publish(output, lambda error: error is None or self._log_lost(error.str()))
        except KafkaException as error:
            self._log_lost(str(error))

    def _log_lost(self, reason: str) -> None:
        self.metrics.publish_errors.inc()
        log.warning("the broker refused a delivery log line", extra={"error": reason})

    def _current(self, delivery: Delivery) -> bool:
        source = self.inputs[source_of(delivery.kind)]
        return source.consumer.is_current((source.topic, delivery.partition), delivery.epoch)

    def _dead_letter(self, outcome: Outcome) -> None:
        delivery = outcome.delivery
        headers: list[tuple[str, bytes | None]] = [
            (TARGET_HEADER, delivery.target.encode()),
            (KIND_HEADER, delivery.kind.value.encode()),
            (ATTEMPTS_HEADER, str(delivery.attempts).encode()),
            (DeadLetterHeader.DETAIL.value, (outcome.error or "").encode()),
            (DeadLetterHeader.SOURCE_TOPIC.value, self._source_topic(delivery).encode()),
            (DeadLetterHeader.SOURCE_PARTITION.value, str(delivery.partition).encode()),
            (DeadLetterHeader.SOURCE_OFFSET.value, str(delivery.offset).encode()),
        ]
        if outcome.status is not None:
            headers.append((STATUS_HEADER, str(outcome.status).encode()))
        record = OutputRecord(self.settings.dlq_topic, delivery.event_id.encode(), delivery.body, headers)
        self.publisher.publish(record, lambda error: self._dead_lettered(outcome, error))

    def _source_topic(self, delivery: Delivery) -> str:
        return self.settings.replays_topic if delivery.replay else self.inputs[source_of(delivery.kind)].topic

    def _dead_lettered(self, outcome: Outcome, error: KafkaError | None) -> None:
        delivery = outcome.delivery
        if error is None:
            self.metrics.failed.labels(delivery.target).inc()
            if self.dead_letters is not None:
                self.dead_letters[delivery.target] += 1
            if not delivery.replay:
                source = self.inputs[source_of(delivery.kind)]
                source.book.release(source.partition(delivery.partition), delivery.offset)
            self._log_delivery(outcome, DeliveryOutcome.FAILED)
            return
        refused = self._refused(error, "a dead letter", event_id=delivery.event_id)
        if refused and (delivery.replay or self._current(delivery)):
            self._dead_letter(outcome)

    # --- rebalance -------------------------------------------------------------------------

    # The callbacks run inside `consume`, so after __init__: `self.inputs` is there.
    def _on_assign(self, kind: Source, partitions: list[int]) -> None:
        source = self.inputs[kind]
        for partition in partitions:
            source.book.assign(source.partition(partition))
        log.info("partitions assigned", extra={"partitions": [f"{source.topic}:{p}" for p in partitions]})

    def _on_revoke(self, kind: Source, partitions: list[int]) -> None:
        source = self.inputs[kind]
        if self.fatal is None and not source.consumer.closing:
            end = self.deadlines.revocation_end()
            while source.book.held() and self.deadlines.drain_left(end) > 0:
                self._settle_outcomes(wait_s=min(0.1, self.deadlines.drain_left(end)))
                self.publisher.poll(0)
            self.publisher.flush(self.deadlines.drain_left(end))
            source.committer.commit()
        unsettled = sum(source.book.forget(source.partition(p)) for p in partitions)
        log.info(
            "partitions revoked",
            extra={"topic": source.topic, "partitions": partitions, "unsettled_deliveries": unsettled},
        )

    def _on_lost(self, kind: Source, partitions: list[int]) -> None:
        source = self.inputs[kind]
        for partition in partitions:
            source.book.forget(source.partition(partition))
        log.warning("partitions lost", extra={"topic": source.topic, "partitions": partitions})

    # --- observability ---------------------------------------------------------------------

    def _observe(self, pending: int) -> None:
        self.metrics.pending.set(pending)
        for name, lane in self.lanes.items():
            self.metrics.queued.labels(name).set(lane.queued())
        self.loop_clock.tick()
        if self._status_due():
            log.info(
                "status",
                extra={
                    "targets": len(self.lanes),
                    "allow_entries": len(self.allowed),
                    "pending": pending,
                    "queued": {name: lane.queued() for name, lane in self.lanes.items()},
                    "assigned": self.alerts.assigned(),
                    "sightings_assigned": self.sightings.assigned(),
                    "visits_assigned": self.visits.assigned(),
                },
            )

    def _readiness(self) -> tuple[bool, str]:
        if not self.targets.loaded:
            return False, "targets not loaded yet"
        if not self.watchlist.loaded:
            return False, "allow lists not loaded yet"
        assigned = self.alerts.assigned()
        if not assigned:
            return False, "no partitions assigned"
        return True, f"{len(self.lanes)} targets, {len(assigned)} partitions assigned"


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker notify`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), NotifyService)
