"""A group consumer of plate records whose callbacks speak partition numbers: the services that read
one topic per group (alerts, notify) key their progress by partition alone."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, Message

from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.records import DEFAULT_PREFETCH_KBYTES, PlateRecord
from stream_worker.service.settings import ServiceSettings

PartitionNumbersCallback = Callable[[list[int]], None]


class PartitionNumbersConsumer(GroupConsumer[PlateRecord]):
    """`topic` in the group `group_id`, each record (partition, offset, value)."""

    def __init__(
        self,
        settings: ServiceSettings,
        topic: str,
        group_id: str,
        metrics: ServiceMetrics,
        on_assign: PartitionNumbersCallback,
        on_revoke: PartitionNumbersCallback,
        on_lost: PartitionNumbersCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        config = kafka.consumer_config(
            settings, group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
        )
        super().__init__(
            config,
            topic,
            metrics,
            on_assign=lambda partitions: on_assign([p for _, p in partitions]),
            on_revoke=lambda partitions: on_revoke([p for _, p in partitions]),
            on_lost=lambda partitions: on_lost([p for _, p in partitions]),
            client=client,
        )

    def _record(self, message: Message) -> PlateRecord:
        return PlateRecord(message.partition(), message.offset(), message.value())
