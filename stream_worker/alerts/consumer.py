"""The plates consumer of the alerts service: the shared group consumer (service/consumer.py),
reading from the committed position (the commit never passes a pass's first read, passes.py),
its callbacks speaking partition numbers."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, Message

from stream_worker.alerts.settings import AlertsSettings
from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.sightings.consumer import DEFAULT_PREFETCH_KBYTES, PlateRecord


class AlertsPlatesConsumer(GroupConsumer[PlateRecord]):
    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: Callable[[list[int]], None],
        on_revoke: Callable[[list[int]], None],
        on_lost: Callable[[list[int]], None],
        client: ClientFactory = Consumer,
    ) -> None:
        config = kafka.consumer_config(
            settings, settings.group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
        )
        super().__init__(
            config,
            settings.input_topic,
            metrics,
            on_assign=lambda partitions: on_assign([p for _, p in partitions]),
            on_revoke=lambda partitions: on_revoke([p for _, p in partitions]),
            on_lost=lambda partitions: on_lost([p for _, p in partitions]),
            client=client,
        )

    def _record(self, message: Message) -> PlateRecord:
        return PlateRecord(message.partition(), message.offset(), message.value())
