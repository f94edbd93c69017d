"""The notify service's consumers: PlateAlerts of `--input-topic` in the group `--group-id`, and
PlateSightings of `--sightings-topic` in `--sightings-group-id` (their rebalances and lag their
own), each record (partition, offset, value), the callbacks speaking partition numbers."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, Message

from stream_worker.notify.settings import NotifySettings
from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.plate_records import DEFAULT_PREFETCH_KBYTES, PlateRecord

PartitionsCallback = Callable[[list[int]], None]


class InputConsumer(GroupConsumer[PlateRecord]):
    def __init__(
        self,
        settings: NotifySettings,
        topic: str,
        group_id: str,
        metrics: ServiceMetrics,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
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
