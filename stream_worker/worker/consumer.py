"""A thin wrapper over confluent-kafka's Consumer: manual commits, plain-value records.

The worker commits explicitly (see offsets.py) with the shared consumer settings
(stream_worker/service/kafka.py); the rest of the worker sees `InputRecord`s and
`(topic, partition)` tuples, never librdkafka types. Records come in offset order per partition:
an offset gap is healed or accepted first (service/gaps.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import Consumer, TopicPartition

from stream_worker.config import WorkerSettings
from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer, SettledGap
from stream_worker.service.kafka import lag_from_statistics
from stream_worker.worker.offsets import Partition
from stream_worker.worker.validate import InputRecord

__all__ = ["FrameConsumer", "consumer_config", "lag_from_statistics"]


PartitionsCallback = Callable[[list[Partition]], None]
LagCallback = Callable[[dict[Partition, int]], None]
GapCallback = Callable[[SettledGap], None]
# Fetched-but-unread frames are the worker's largest memory use; librdkafka's default prefetch
# (64 MiB per partition) is far more than a batch pipeline needs.
DEFAULT_PREFETCH_KBYTES = 16 * 1024


def consumer_config(settings: WorkerSettings) -> dict[str, object]:
    return kafka.consumer_config(
        settings, settings.group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
    )


class FrameConsumer:
    def __init__(
        self,
        settings: WorkerSettings,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
        on_lag: LagCallback,
        on_gap: GapCallback | None = None,
    ) -> None:
        config = consumer_config(settings)
        config["stats_cb"] = lambda statistics_json: on_lag(lag_from_statistics(statistics_json))
        self.gaps = GapHealer(on_settled=on_gap)
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        self._consumer = Consumer(config)
        self._consumer.subscribe(
            [settings.input_topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )

    # librdkafka's rebalance callbacks (they run inside `consume`). The committed position is not
    # known here: a partition's expected offset comes from its first record.
    def _assigned(self, _consumer: object, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self.gaps.assign(partitions)
        self._on_assign(partitions)

    def _revoked(self, _consumer: object, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self._on_revoke(partitions)
        self.gaps.forget(partitions)

    def _lost(self, _consumer: object, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self._on_lost(partitions)
        self.gaps.forget(partitions)

    def consume(self, max_records: int, timeout_s: float) -> list[InputRecord]:
        """Up to `max_records` records, in offset order per partition (see service/gaps.py);
        broker-side errors are logged, a fatal one raises."""
        records = []
        for message in kafka.consume_records(self._consumer, max_records, timeout_s, self.gaps):
            records.append(
                InputRecord(
                    topic=message.topic(),
                    partition=message.partition(),
                    offset=message.offset(),
                    key=message.key(),
                    value=message.value(),
                    headers=list(message.headers() or ()),
                    received_at=time.monotonic(),
                )
            )
        return records

    def pause(self, partitions: Iterable[Partition]) -> None:
        self._consumer.pause([TopicPartition(t, p) for t, p in partitions])

    def resume(self, partitions: Iterable[Partition]) -> None:
        self._consumer.resume([TopicPartition(t, p) for t, p in partitions])

    def commit(self, positions: Mapping[Partition, int]) -> None:
        """Synchronous: the caller treats the positions as committed only when this returns."""
        self._consumer.commit(
            offsets=[TopicPartition(t, p, offset) for (t, p), offset in positions.items()], asynchronous=False
        )

    def close(self) -> None:
        self._consumer.close()
