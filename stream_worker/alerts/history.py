"""The read alerts published lately, by this process or another replica, read back from the alerts
topic into the memory of alerted passes (recent.py): so that a sighting finds its pass's read
alert after a restart (the memory starts empty) and when another replica read the pass.

`load` reads each partition's last `per_partition` records (the local broker cannot look an
offset up by time: it answers every timestamp with offset 0), then `poll` follows the topic from
there, each turn, never blocking. A read alert of the plates topic is remembered as a pass of one
read, its pass's first matching read (the alert's `source`): a sighting whose reads include that
read confirms it. Its capture time also starts its camera and entry's cooldown (`on_alert`,
cooldowns.py): a pass of an earlier run resumed after a restart does not alert again. A correction
alert's id goes to `on_correction` (corrections.py: a correction read again raises it no more). A
sighting alert of the plates topic starts its camera and entry's cooldown too (`on_sighting_alert`),
and is otherwise passed over, as are alerts of another plates topic, alerts older than the memory's
age and passes already remembered; records that are not PlateAlerts are skipped and counted. Reading the
history late or not at all (a missing topic, a slow broker) costs at most a duplicate, never a
lost alert.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from confluent_kafka import KafkaException, TopicPartition
from pydantic import ValidationError

from stream_worker.alerts.recent import PassKey, RecentPasses
from stream_worker.contracts import AlertOrigin, PlateAlert
from stream_worker.service import kafka
from stream_worker.service.compacted import CompactedTopicError, side_consumer, topic_partitions
from stream_worker.service.gaps import GapHealer

log = logging.getLogger(__name__)

LOAD_TIMEOUT_S = 10.0
LOOK_AGAIN_S = 5.0  # how often a missing alerts topic is looked for
POLL_BATCH = 500
_LOAD_WAIT_S = 0.2


@dataclass(frozen=True, slots=True)
class OneRead:
    """A pass known by its first matching read only (recent.Span)."""

    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class HistoryRules:
    plates_topic: str
    max_age_s: float  # the memory's own (RecentPasses.max_age_s), by the alert's alerted_at


def remember_alert(
    value: bytes | None,
    rules: HistoryRules,
    recent: RecentPasses,
    wall_now: datetime,
    now: float,
    on_alert: Callable[[PassKey, float, int], None] = lambda key, time, offset: None,
    on_correction: Callable[[str], None] = lambda alert_id: None,
    on_sighting_alert: Callable[[PassKey, float, str], None] = lambda key, time, sighting_id: None,
) -> bool | None:
    """Remember one record of the alerts topic: True when remembered, False when passed over,
    None when it is not a PlateAlert. `now`: monotonic seconds, as the memory counts;
    `on_alert(key, capture time, offset)`: each read alert of the plates topic, for the cooldowns;
    `on_correction(alert id)`: each correction alert; `on_sighting_alert(key, capture time, sighting
    id)`: each sighting alert of the plates topic, for the cooldowns."""
    try:
        alert = PlateAlert.model_validate_json(value or b"")
    except ValidationError:
        return None
    if alert.origin is AlertOrigin.CORRECTION:
        on_correction(alert.alert_id)
        return False
    source = alert.source
    if source.topic != rules.plates_topic:
        return False
    if (wall_now - alert.alerted_at).total_seconds() > rules.max_age_s:
        return False
    key = (source.partition, alert.camera_id, alert.plate)
    if alert.origin is AlertOrigin.SIGHTING:
        if alert.captured_at is not None and alert.sighting_id is not None:
            on_sighting_alert(key, alert.captured_at.timestamp(), alert.sighting_id)
        return False
    if alert.captured_at is not None:
        on_alert(key, alert.captured_at.timestamp(), source.offset)
    if recent.overlaps(key, source.offset, source.offset, now):
        return False  # this process's own alert, remembered as it was raised
    recent.remember(key, OneRead(source.offset, source.offset), now)
    return True


class AlertHistory:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        rules: HistoryRules,
        per_partition: int,
        config: Mapping[str, object] | None = None,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_alert: Callable[[PassKey, float, int], None] = lambda key, time, offset: None,
        on_correction: Callable[[str], None] = lambda alert_id: None,
        on_sighting_alert: Callable[[PassKey, float, str], None] = lambda key, time, sighting_id: None,
    ) -> None:
        """`on_alert`, `on_correction`, `on_sighting_alert`: each read, correction and sighting
        alert read back, as `remember_alert` says."""
        self.topic = topic
        self._on_alert = on_alert
        self._on_correction = on_correction
        self._on_sighting_alert = on_sighting_alert
        self.rules = rules
        self.per_partition = per_partition
        self.loaded = False
        self.remembered = 0  # read alerts put into the memory
        self.skipped = 0  # records that are not PlateAlerts
        self._wall_clock = wall_clock
        self._consumer = side_consumer(bootstrap_servers, config, "alerts-history")
        self._gaps = GapHealer()
        self._assigned = False
        self._looked_at = 0.0

    def load(self, recent: RecentPasses) -> None:
        """Read the last `per_partition` alerts of each partition into `recent`, for at most
        LOAD_TIMEOUT_S (then what is left comes with the following polls)."""
        if self.per_partition > 0:
            ends = self._assign()
            deadline = time.monotonic() + LOAD_TIMEOUT_S
            while ends and time.monotonic() < deadline:
                for message in self._read(_LOAD_WAIT_S, recent):
                    if message.offset() >= ends.get(message.partition(), 0) - 1:
                        ends.pop(message.partition(), None)
            if ends:
                log.warning(
                    "alerts history not read to its end in time; following it from where it got",
                    extra={"topic": self.topic, "partitions_left": sorted(ends)},
                )
            log.info(
                "alerts history read",
                extra={"topic": self.topic, "remembered": self.remembered, "skipped": self.skipped},
            )
        self.loaded = True

    def poll(self, recent: RecentPasses) -> int:
        """Remember what was published since (never blocks); how many were remembered."""
        if self.per_partition <= 0:
            return 0
        if not self._assigned:
            if time.monotonic() - self._looked_at < LOOK_AGAIN_S:
                return 0
            self._assign()  # a topic created since, or a broker that answers now
        before = self.remembered
        self._read(0, recent)
        return self.remembered - before

    def _assign(self) -> dict[int, int]:
        """Assign every partition from its last `per_partition` records; returns the ends of
        those with records to read. Nothing when the topic is missing or the broker does not
        answer (looked for again later)."""
        self._looked_at = time.monotonic()
        try:
            partitions = topic_partitions(self._consumer, self.topic, LOAD_TIMEOUT_S)
            if partitions is None:
                return {}
            parts, ends, starts = [], {}, {}
            for partition in partitions:
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=LOAD_TIMEOUT_S
                )
                start = max(low, high - self.per_partition)
                parts.append(TopicPartition(self.topic, partition, start))
                starts[(self.topic, partition)] = start
                if high > start:
                    ends[partition] = high
        except (KafkaException, CompactedTopicError) as error:
            log.warning("cannot read the alerts history yet", extra={"error": str(error)})
            return {}
        self._gaps.assign(starts, starts)
        self._consumer.assign(parts)
        self._assigned = True
        return ends

    def _read(self, wait_s: float, recent: RecentPasses) -> list:
        messages = kafka.consume_records(self._consumer, POLL_BATCH, wait_s, self._gaps)
        wall_now, now = self._wall_clock(), time.monotonic()
        for message in messages:
            outcome = remember_alert(
                message.value(),
                self.rules,
                recent,
                wall_now,
                now,
                self._on_alert,
                self._on_correction,
                self._on_sighting_alert,
            )
            self.remembered += outcome is True
            self.skipped += outcome is None
        return messages

    def close(self) -> None:
        self._consumer.close()
