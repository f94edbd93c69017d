"""The store's consumer: the shared group consumer (service/consumer.py) on the sightings, the
alerts, the camera-status and the visits topics at once, records kept with their topic."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Message

from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer
from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.records import DEFAULT_PREFETCH_KBYTES
from stream_worker.store.settings import StoreSettings

# A sighting carries its picture (~17 KB a record), so the 4 MiB prefetch holds ~250 of them, and
# librdkafka waits fetch.queue.backoff.ms (1 s by default) before fetching again once it is full:
# that capped the store near 570 sightings/s. 20 ms: ~3,100/s on SQLite on the local broker.
FULL_QUEUE_BACKOFF_MS = 20


@dataclass(frozen=True, slots=True)
class StoreRecord:
    topic: str
    partition: int
    offset: int
    value: bytes | None
    key: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)  # kept for a dead letter


class StoreConsumer(GroupConsumer[StoreRecord]):
    def __init__(
        self,
        settings: StoreSettings,
        metrics: ServiceMetrics,
        on_assign: Callable[[list[Partition]], None],
        on_revoke: Callable[[list[Partition]], None],
        on_lost: Callable[[list[Partition]], None],
        client: ClientFactory = Consumer,
    ) -> None:
        config = kafka.consumer_config(
            settings,
            settings.group_id,
            **{
                "queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES,
                "fetch.queue.backoff.ms": FULL_QUEUE_BACKOFF_MS,
            },
        )
        topics = [
            settings.sightings_topic,
            settings.alerts_topic,
            settings.camera_status_topic,
            settings.visits_topic,
        ]
        super().__init__(config, topics, metrics, on_assign, on_revoke, on_lost, client=client)

    def _record(self, message: Message) -> StoreRecord:
        return StoreRecord(
            message.topic(),
            message.partition(),
            message.offset(),
            message.value(),
            message.key(),
            list(message.headers() or []),
        )
