"""The consumers of the alerts service: the shared consumer of partition numbers
(service/plate_consumer.py) on the plates, the sightings and the corrections topics, each reading
from its committed position (no commit passes a record whose alerts are unacknowledged: passes.py,
sightings.py, corrections.py). Each record is (partition, offset, value)."""

from __future__ import annotations

from confluent_kafka import Consumer

from stream_worker.alerts.settings import AlertsSettings
from stream_worker.service.consumer import ClientFactory
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.plate_consumer import PartitionNumbersCallback, PartitionNumbersConsumer


class AlertsPlatesConsumer(PartitionNumbersConsumer):
    """PlateEvents of `--input-topic`, in the group `--group-id`."""

    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionNumbersCallback,
        on_revoke: PartitionNumbersCallback,
        on_lost: PartitionNumbersCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            settings, settings.input_topic, settings.group_id, metrics, on_assign, on_revoke, on_lost, client
        )


class AlertsSightingsConsumer(PartitionNumbersConsumer):
    """PlateSightings of `--sightings-topic`, in its own group `--sightings-group-id`: its
    rebalances and lag are its own, apart from the plates topic's."""

    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionNumbersCallback,
        on_revoke: PartitionNumbersCallback,
        on_lost: PartitionNumbersCallback,
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


class AlertsCorrectionsConsumer(PartitionNumbersConsumer):
    """Corrections of `--corrections-topic`, in its own group `--corrections-group-id`."""

    def __init__(
        self,
        settings: AlertsSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionNumbersCallback,
        on_revoke: PartitionNumbersCallback,
        on_lost: PartitionNumbersCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            settings,
            settings.corrections_topic,
            settings.corrections_group_id,
            metrics,
            on_assign,
            on_revoke,
            on_lost,
            client,
        )
