"""The plates consumer: on assignment, each partition starts a little before its committed position.

A partition with a committed position C is read again from `replay_from`: the offset whose record
time is `replay_lookback_s` before that of the record at C - 1, found with the broker's
time index (offsets_for_times). Passes that straddle C are then rebuilt from their first read
(service/offsets.py says why). A broker that cannot answer by time (the local Tansu answers offset 0)
makes the replay start earlier, which is slower but as correct; one that cannot find the record
at C - 1 (deleted by retention) starts at C.

Everything else (manual commits, ownership, offset gaps healed in order, lag) is the shared group
consumer's (service/consumer.py); the expected offset of a partition is where its reading starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, Message, TopicPartition

from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.records import DEFAULT_PREFETCH_KBYTES, PlateRecord
from stream_worker.sightings.settings import SightingsSettings

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Assigned:
    partition: int
    floor: int | None  # the committed position (None: none, the group starts per auto.offset.reset)
    replay_from: int | None  # where reading starts (None: at the floor or per auto.offset.reset)


class PlatesConsumer(GroupConsumer[PlateRecord]):
    """The shared group consumer (service/consumer.py) reading plate events, whose assignment
    starts each partition at its replay position; its callbacks speak partition numbers."""

    def __init__(
        self,
        settings: SightingsSettings,
        metrics: ServiceMetrics,
        on_assign: Callable[[list[Assigned]], None],
        on_revoke: Callable[[list[int]], None],
        on_lost: Callable[[list[int]], None],
        client: ClientFactory = Consumer,
    ) -> None:
        self._settings = settings
        self._topic = settings.input_topic
        self._starting: list[Assigned] = []  # of the assignment under way
        config = kafka.consumer_config(
            settings, settings.group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
        )
        self._probe_config = {**config, "group.id": f"{settings.group_id}.replay-probe"}
        super().__init__(
            config,
            self._topic,
            metrics,
            on_assign=lambda _partitions: on_assign(self._starting),
            on_revoke=lambda partitions: on_revoke([p for _, p in partitions]),
            on_lost=lambda partitions: on_lost([p for _, p in partitions]),
            client=client,
        )

    def _start_positions(self, client: Any, parts: list[TopicPartition]) -> dict[Partition, int]:
        self._starting = assigned = self._starts(parts)
        client.assign(
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
        return {(self._topic, p): start for p, start in starts.items() if start is not None}

    def _starts(self, parts: list[TopicPartition]) -> list[Assigned]:
        committed = self._client.committed(parts, timeout=PROBE_TIMEOUT_S)
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

    def _record(self, message: Message) -> PlateRecord:
        return PlateRecord(message.partition(), message.offset(), message.value())
