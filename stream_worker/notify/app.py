"""The composition root of `stream-worker notify`: consume alerts -> decide per target (rules.py)
-> deliver on each target's lane (lanes.py, webhook.py) -> commit, the Kafka side on one thread.

Guarantees and how they are kept:
- The targets are read whole before the first alert is decided (not ready until then), then
  followed live each turn: a target added, changed or removed counts from the next alert; a
  removed (or disabled) target's queued deliveries are dropped, counted.
- At-least-once: an alert's offset is committed only once each of its deliveries is settled: the
  target acknowledged it (2xx), or it is in `--dlq-topic` (acknowledged by the broker) after the
  retry budget or a final refusal (progress.py). A crash re-reads from the commit and delivers
  again, with the same `X-Stream-Worker-Event`.
- A dead or slow target delays only its own lane; the others go on. Deliveries not settled are
  bounded by `--max-pending` (reading pauses), which a dead target reaches only if alerts come
  faster than `max-pending / retry-budget-s`.
- Secrets: resolved in webhook.py only; errors are redacted there before they reach a log line,
  a metric (never: targets are labelled by name) or a DLQ header.
- Rebalance and SIGTERM/SIGINT: what settles within the drain time is committed; the rest is
  left uncommitted and delivered again by whoever reads the partition next.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from pydantic import ValidationError

from stream_worker.contracts import PlateAlert
from stream_worker.contracts.frames import DeadLetterHeader
from stream_worker.contracts.notify import NotifyTarget, TargetType
from stream_worker.notify.consumer import AlertsConsumer
from stream_worker.notify.lanes import Backoff, Delivery, Lane, Outcome, Sender
from stream_worker.notify.metrics import NotifyMetrics
from stream_worker.notify.mqtt import MqttSender
from stream_worker.notify.progress import Progress
from stream_worker.notify.rules import Cooldown, Facts, passes
from stream_worker.notify.settings import NotifySettings, load_settings
from stream_worker.notify.targets import decode_record
from stream_worker.notify.webhook import WebhookSender
from stream_worker.service import kafka
from stream_worker.service.commits import Committer
from stream_worker.service.compacted import CompactedFollower, CompactedTopicError
from stream_worker.service.deadlines import Deadlines
from stream_worker.service.http import HealthServer, LoopClock
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.plate_records import PlateRecord
from stream_worker.service.publisher import OutputRecord, Publisher

log = logging.getLogger("stream_worker.notify")

CONSUME_CHUNK = 500
POLL_S = 0.05
LOAD_RETRY_S = 2.0
LANE_JOIN_S = 1.0
TARGET_HEADER = "notify.target"
ATTEMPTS_HEADER = "notify.attempts"
STATUS_HEADER = "notify.status"


class NotifyService(LoopService):
    log = log
    started_message = "notify started"

    def __init__(self, settings: NotifySettings) -> None:
        super().__init__(Deadlines(settings.shutdown_timeout_s, settings.revoke_timeout_s))
        self.settings = settings
        self.metrics = NotifyMetrics()
        self.loop_clock = LoopClock()
        # First, so that a busy --metrics-port fails before anything connects anywhere.
        self.http = HealthServer(
            self.metrics, settings.metrics_host, settings.metrics_port, self._readiness, self.loop_clock.age_s
        )
        self.targets: CompactedFollower[str, NotifyTarget] = CompactedFollower(
            settings.bootstrap_servers,
            settings.targets_topic,
            decode_record,
            settings.kafka_config,
            on_skipped=self.metrics.targets_skipped.inc,
            name="notify targets",
        )
        self.backoff = Backoff(settings.initial_backoff_s, settings.max_backoff_s, settings.retry_budget_s)
        self.outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.lanes: dict[str, Lane] = {}
        self.cooldown = Cooldown()
        self.progress = Progress()
        self.publisher = Publisher(kafka.producer_config(settings))
        self.consumer = AlertsConsumer(
            settings, self.metrics, self._on_assign, self._on_revoke, self._on_lost
        )
        topic = settings.input_topic
        self.committer = Committer(
            self.consumer, self.progress, self.metrics, partition_of=lambda p: (topic, p)
        )

    # --- lifecycle -------------------------------------------------------------------------

    def _started_fields(self) -> dict[str, Any]:
        return {
            "input_topic": self.settings.input_topic,
            "targets_topic": self.settings.targets_topic,
            "dlq_topic": self.settings.dlq_topic,
            "group_id": self.settings.group_id,
            "allow_private_targets": self.settings.allow_private_targets,
            "kafka_config": self.settings.redacted_kafka_config(),
        }

    def _turn(self) -> None:
        if not self.targets.loaded:
            self._load_targets()
            return
        if self.targets.poll():
            self._follow_targets()
        for record in self.consumer.consume(CONSUME_CHUNK, POLL_S):
            self._accept(record)
        self._settle_outcomes()
        self.publisher.poll(0)
        self.committer.commit()
        pending = self.progress.pending()
        self.consumer.throttle(pending, self.settings.max_pending)
        self._observe(pending)

    def _load_targets(self) -> None:
        try:
            self.targets.load()
        except CompactedTopicError as error:
            log.warning("cannot read the notify targets yet, trying again", extra={"error": str(error)})
            time.sleep(LOAD_RETRY_S)
            return
        finally:
            self.loop_clock.tick()
        self._follow_targets()

    def _shutdown(self) -> int:
        self.deadlines.begin_shutdown()
        if self.fatal is None:
            self.consumer.pause_all()
            while self.progress.pending() and self.deadlines.drain_left() > 0:
                self._settle_outcomes(wait_s=min(0.1, self.deadlines.drain_left()))
                self.publisher.poll(0)
        for lane in self.lanes.values():
            lane.stop(discard=False)
        for lane in self.lanes.values():
            lane.join(LANE_JOIN_S)
        self._settle_outcomes()
        undelivered = self.publisher.flush(self.deadlines.final_flush_left())
        if self.fatal is None:
            self.committer.commit()
        unsettled = self.progress.pending()
        self._leave_group()
        self.targets.close()
        self.http.stop()
        log.info(
            "stopped",
            extra={
                "seconds": round(self.deadlines.shutdown_seconds(), 3),
                "unsettled_deliveries_left_uncommitted": unsettled,
                "undelivered_dead_letters": undelivered,
            },
        )
        return 1 if self.fatal is not None else 0

    # --- targets ---------------------------------------------------------------------------

    def _follow_targets(self) -> None:
        """One lane per enabled target: new ones started, changed ones updated, gone ones stopped."""
        wanted = {name: target for name, target in self.targets.values.items() if target.enabled}
        gone = [
            name
            for name, lane in self.lanes.items()
            if name not in wanted or wanted[name].type != lane.target.type
        ]
        for name in gone:
            self.lanes.pop(name).stop(discard=True)
            log.info(
                "target removed, disabled or retyped: its queued deliveries are dropped",
                extra={"target": name},
            )
        for name, target in wanted.items():
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

    def _sender(self, name: str, target: NotifyTarget) -> Sender:
        """The lane's own sender (its own connections: a hanging target holds none of another's)."""
        allow_private, ca_file = self.settings.allow_private_targets, self.settings.ca_file
        if target.type is TargetType.MQTT:
            return MqttSender(name, allow_private, ca_file)
        return WebhookSender(allow_private, ca_file)

    def _count_retry(self, name: str) -> None:
        self.metrics.retried.labels(name).inc()

    # --- the pipeline ----------------------------------------------------------------------

    def _accept(self, record: PlateRecord) -> None:
        partition = record.partition
        if partition not in self.progress.assigned():
            return  # fetched before a revocation: its next owner reads it
        self.metrics.alerts_in.inc()
        try:
            alert = PlateAlert.model_validate_json(record.value or b"")
        except ValidationError as error:
            self.metrics.invalid_alerts.inc()
            log.warning(
                "skipped a record that is not a PlateAlert",
                extra={"partition": partition, "offset": record.offset, "error": str(error)[:300]},
            )
            self.progress.add(partition, record.offset, 0)
            return
        facts = _facts(alert)
        body = alert.to_json()
        epoch = self.consumer.epoch((self.settings.input_topic, partition))
        deadline = time.monotonic() + self.settings.retry_budget_s
        chosen = [
            (name, lane)
            for name, lane in self.lanes.items()
            if passes(lane.target.rules, facts)
            and self.cooldown.admit(name, lane.target.rules.cooldown_s, facts)
        ]
        self.progress.add(partition, record.offset, len(chosen))
        for name, lane in chosen:
            lane.put(
                Delivery(
                    name, alert.alert_id, body, partition, record.offset, epoch, alert.alerted_at, deadline
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
        if not self._current(delivery):
            return  # its partition was revoked meanwhile: whoever owns it now delivers it again
        if outcome.ok:
            self.metrics.sent.labels(delivery.target).inc()
            self.metrics.latency.labels(delivery.target).observe(outcome.seconds)
            self.progress.settle(delivery.partition, delivery.offset)
        elif outcome.dropped:
            self.metrics.dropped.labels(delivery.target).inc()
            self.progress.settle(delivery.partition, delivery.offset)
        else:
            log.warning(
                "delivery given up: publishing it to the DLQ",
                extra={
                    "target": delivery.target,
                    "event_id": delivery.event_id,
                    "attempts": delivery.attempts,
                    "status": outcome.status,
                    "error": outcome.error,
                },
            )
            self._dead_letter(outcome)

    def _current(self, delivery: Delivery) -> bool:
        return self.consumer.is_current((self.settings.input_topic, delivery.partition), delivery.epoch)

    def _dead_letter(self, outcome: Outcome) -> None:
        delivery = outcome.delivery
        headers: list[tuple[str, bytes | None]] = [
            (TARGET_HEADER, delivery.target.encode()),
            (ATTEMPTS_HEADER, str(delivery.attempts).encode()),
            (DeadLetterHeader.DETAIL.value, (outcome.error or "").encode()),
            (DeadLetterHeader.SOURCE_TOPIC.value, self.settings.input_topic.encode()),
            (DeadLetterHeader.SOURCE_PARTITION.value, str(delivery.partition).encode()),
            (DeadLetterHeader.SOURCE_OFFSET.value, str(delivery.offset).encode()),
        ]
        if outcome.status is not None:
            headers.append((STATUS_HEADER, str(outcome.status).encode()))
        record = OutputRecord(self.settings.dlq_topic, delivery.event_id.encode(), delivery.body, headers)
        self.publisher.publish(record, lambda error: self._dead_lettered(outcome, error))

    def _dead_lettered(self, outcome: Outcome, error: KafkaError | None) -> None:
        delivery = outcome.delivery
        if error is None:
            self.metrics.failed.labels(delivery.target).inc()
            self.progress.settle(delivery.partition, delivery.offset)
            return
        self.metrics.publish_errors.inc()
        if error.fatal():
            self.fatal = KafkaException(error)
            return
        log.warning(
            "broker refused a dead letter, publishing it again",
            extra={"event_id": delivery.event_id, "error": error.str()},
        )
        if self._current(delivery):
            self._dead_letter(outcome)

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.progress.assign(partition)
        log.info(
            "partitions assigned",
            extra={"partitions": [f"{self.settings.input_topic}:{p}" for p in partitions]},
        )

    def _on_revoke(self, partitions: list[int]) -> None:
        if self.fatal is None:
            end = self.deadlines.revocation_end()
            while self.progress.pending() and self.deadlines.drain_left(end) > 0:
                self._settle_outcomes(wait_s=min(0.1, self.deadlines.drain_left(end)))
                self.publisher.poll(0)
            self.publisher.flush(self.deadlines.drain_left(end))
            self.committer.commit()
        unsettled = sum(self.progress.revoke(p) for p in partitions)
        log.info("partitions revoked", extra={"partitions": partitions, "unsettled_deliveries": unsettled})

    def _on_lost(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.progress.revoke(partition)
        log.warning("partitions lost", extra={"partitions": partitions})

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
                    "pending": pending,
                    "queued": {name: lane.queued() for name, lane in self.lanes.items()},
                    "assigned": self.progress.assigned(),
                },
            )

    def _readiness(self) -> tuple[bool, str]:
        if not self.targets.loaded:
            return False, "targets not loaded yet"
        assigned = self.progress.assigned()
        if not assigned:
            return False, "no partitions assigned"
        return True, f"{len(self.lanes)} targets, {len(assigned)} partitions assigned"


def _facts(alert: PlateAlert) -> Facts:
    at: datetime = alert.captured_at or alert.alerted_at
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # the contract's times are UTC
    return Facts(
        event_id=alert.alert_id,
        plate=alert.plate,
        list=alert.list,
        camera_id=alert.camera_id,
        confidence=alert.confidence,
        at=at,
    )


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker notify`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), NotifyService)
