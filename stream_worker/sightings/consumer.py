"""The plates consumer: manual commits, and on assignment a start a little before the commit.

A partition with a committed position C is read again from `replay_from`: the offset whose record
time is `replay_lookback_s` before that of the record at C - 1, found with the broker's
time index (offsets_for_times). Passes that straddle C are then rebuilt from their first read
(commits.py says why). A broker that cannot answer by time (the local Tansu answers offset 0)
makes the replay start earlier, which is slower but as correct; one that cannot find the record
at C - 1 (deleted by retention) starts at C.

Records come in offset order per partition: an offset gap is healed or accepted first
(service/gaps.py), the expected offset of a partition being where its reading starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, TopicPartition

from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer, SettledGap
from stream_worker.sightings.settings import SightingsSettings

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0
# A pass's records are small JSON: the default prefetch (64 MiB per partition) is far too much.
DEFAULT_PREFETCH_KBYTES = 4 * 1024


@dataclass(frozen=True, slots=True)
class PlateRecord:
    partition: int
    offset: int
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Assigned:
    partition: int
    floor: int | None  # the committed position (None: none, the group starts per auto.offset.reset)
    replay_from: int | None  # where reading starts (None: at the floor or per auto.offset.reset)


class PlatesConsumer:
    def __init__(
        self,
        settings: SightingsSettings,
        on_assign: Callable[[list[Assigned]], None],
        on_revoke: Callable[[list[int]], None],
        on_lost: Callable[[list[int]], None],
        on_lag: Callable[[dict[int, int]], None],
        on_gap: Callable[[SettledGap], None] | None = None,
    ) -> None:
        self._settings = settings
        self._topic = settings.input_topic
        self.gaps = GapHealer(on_settled=on_gap)
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        config = kafka.consumer_config(
            settings, settings.group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
        )
        config["stats_cb"] = lambda stats: on_lag(
            {p: lag for (t, p), lag in kafka.lag_from_statistics(stats).items() if t == self._topic}
        )
        self._probe_config = {**config, "group.id": f"{settings.group_id}.replay-probe"}
        self._probe_config.pop("stats_cb")
        self._consumer = Consumer(config)
        self._consumer.subscribe(
            [self._topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )

    # librdkafka's rebalance callbacks (they run inside `consume`).
    def _assigned(self, consumer: Consumer, parts: list[TopicPartition]) -> None:
        assigned = self._starts(parts)
        consumer.assign(
            [
                TopicPartition(self._topic, a.partition, a.replay_from)
                for a in assigned
                if a.replay_from is not None
            ]
            + [TopicPartition(self._topic, a.partition) for a in assigned if a.replay_from is None]
        )
        # Reading starts at `replay_from`, else at the committed floor; with neither, where the
        # auto.offset.reset puts it, known from the first record.
        starts = {a.partition: a.replay_from if a.replay_from is not None else a.floor for a in assigned}
        self.gaps.assign(
            [(self._topic, a.partition) for a in assigned],
            {(self._topic, p): start for p, start in starts.items() if start is not None},
        )
        self._on_assign(assigned)

    def _revoked(self, _consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._on_revoke([p.partition for p in parts])
        self.gaps.forget(kafka.partitions(parts))

    def _lost(self, _consumer: Consumer, parts: list[TopicPartition]) -> None:
        self._on_lost([p.partition for p in parts])
        self.gaps.forget(kafka.partitions(parts))

    def _starts(self, parts: list[TopicPartition]) -> list[Assigned]:
        committed = self._consumer.committed(parts, timeout=PROBE_TIMEOUT_S)
        assigned = []
        for part in committed:
            floor = part.offset if part.offset >= 0 else None
            replay_from = self._replay_from(part.partition, floor) if floor else None
            assigned.append(Assigned(part.partition, floor, replay_from))
        return assigned

    def _replay_from(self, partition: int, floor: int) -> int:
        probe = Consumer(self._probe_config)
        try:
            probe.assign([TopicPartition(self._topic, partition, floor - 1)])
            messages = probe.consume(1, PROBE_TIMEOUT_S)
            if not messages or messages[0].error() is not None or messages[0].offset() != floor - 1:
                log.warning(
                    "no record before the committed position: replaying from it",
                    extra={"partition": partition},
                )
                return floor
            _, timestamp_ms = messages[0].timestamp()
            target = max(0, timestamp_ms - int(self._settings.replay_lookback_s * 1000))
            [found] = probe.offsets_for_times(
                [TopicPartition(self._topic, partition, target)], PROBE_TIMEOUT_S
            )
        except KafkaException as error:
            log.warning("cannot look back before the committed position", extra={"error": str(error)})
            return floor
        finally:
            probe.close()
        start = floor if found.offset < 0 or found.offset == OFFSET_INVALID else min(found.offset, floor)
        log.info(
            "replaying before the committed position",
            extra={"partition": partition, "from": start, "floor": floor},
        )
        return start

    def consume(self, max_records: int, timeout_s: float) -> list[PlateRecord]:
        """Up to `max_records` records, in offset order per partition (see service/gaps.py);
        broker-side errors are logged, a fatal one raises."""
        records = []
        for message in kafka.consume_records(self._consumer, max_records, timeout_s, self.gaps):
            records.append(PlateRecord(message.partition(), message.offset(), message.value()))
        return records

    def commit(self, positions: Mapping[int, int]) -> None:
        """Synchronous: the caller treats the positions as committed only when this returns."""
        self._consumer.commit(
            offsets=[TopicPartition(self._topic, p, offset) for p, offset in positions.items()],
            asynchronous=False,
        )

    def close(self) -> None:
        self._consumer.close()
