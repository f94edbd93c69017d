"""The consumers of the alerts service: the shared group consumer (service/consumer.py) on the plates
topic and on the sightings topic, each reading from its committed position (neither commit passes
a record whose alerts are unacknowledged: passes.py, sightings.py), their callbacks speaking
partition numbers. Both records are (partition, offset, value)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, Message

from stream_worker.alerts.settings import AlertsSettings
from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.plate_records import DEFAULT_PREFETCH_KBYTES, PlateRecord

PartitionsCallback = Callable[[list[int]], None]


class _PartitionNumbersConsumer(GroupConsumer[PlateRecord]):
    def __init__(
        self,
        settings: AlertsSettings,
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


class AlertsPlatesConsumer(_PartitionNumbersConsumer):
    """PlateEvents of `--input-topic`, in the group `--group-id`."""

    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            settings, settings.input_topic, settings.group_id, metrics, on_assign, on_revoke, on_lost, client
        )


class AlertsSightingsConsumer(_PartitionNumbersConsumer):
    """PlateSightings of `--sightings-topic`, in its own group `--sightings-group-id`: its
    rebalances and lag are its own, apart from the plates topic's."""

    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            settings,
            settings.sightings_topic,
            settings.sightings_group_id,
            metrics,
            on_assign,
            on_revoke,
            on_lost,
            client,
        )
