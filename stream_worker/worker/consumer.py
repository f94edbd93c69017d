"""The worker's consumer: the shared group consumer (service/consumer.py) reading frames.

What it adds is the record type (`InputRecord`, stamped with when it was received, for the
frame latency) and a smaller prefetch than librdkafka's default.
"""

from __future__ import annotations

import time

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, Message

from stream_worker.service import kafka
from stream_worker.service.consumer import ClientFactory, GroupConsumer, PartitionsCallback
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.worker.settings import WorkerSettings
from stream_worker.worker.validate import InputRecord

# Fetched-but-unread frames are the worker's largest memory use; librdkafka's default prefetch
# (64 MiB per partition) is far more than a batch pipeline needs.
DEFAULT_PREFETCH_KBYTES = 16 * 1024


def consumer_config(settings: WorkerSettings) -> dict[str, object]:
    return kafka.consumer_config(
        settings, settings.group_id, **{"queued.max.messages.kbytes": DEFAULT_PREFETCH_KBYTES}
    )


class FrameConsumer(GroupConsumer[InputRecord]):
    def __init__(
        self,
        settings: WorkerSettings,
        metrics: ServiceMetrics,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        super().__init__(
            consumer_config(settings), settings.input_topic, metrics, on_assign, on_revoke, on_lost, client
        )

    def _record(self, message: Message) -> InputRecord:
        return InputRecord(
            topic=message.topic(),
            partition=message.partition(),
            offset=message.offset(),
            key=message.key(),
            value=message.value(),
            headers=list(message.headers() or ()),
            received_at=time.monotonic(),
            produced_ms=_timestamp_ms(message),
        )


def _timestamp_ms(message: Message) -> int | None:
    kind, value = message.timestamp()
    return value if kind != TIMESTAMP_NOT_AVAILABLE else None
