"""The idempotent producer (acks=all) for events and dead letters, with per-record delivery callbacks.

Idempotence keeps the order of a partition's records across the producer's own retries, which
per-camera ordering relies on; the delivery callback is what lets an offset be committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from stream_worker.config import WorkerSettings
from stream_worker.worker.events import OutgoingRecord

log = logging.getLogger(__name__)

# Delivery outcome: None when the broker acknowledged the record, else the error.
DeliveryCallback = Callable[[KafkaError | None], None]
_HEADROOM_BYTES = 64 * 1024  # key, headers and batch overhead around a dead-lettered frame


def producer_config(settings: WorkerSettings) -> dict[str, object]:
    return {
        "linger.ms": 5,
        # Room for a dead-lettered frame of up to --max-frame-bytes (the broker may still refuse it).
        "message.max.bytes": max(1_000_000, settings.max_frame_bytes + _HEADROOM_BYTES),
        **settings.kafka_config,
        "bootstrap.servers": settings.bootstrap_servers,
        "enable.idempotence": True,
        "acks": "all",
        "logger": logging.getLogger("rdkafka.producer"),
    }


class Publisher:
    def __init__(self, settings: WorkerSettings) -> None:
        self._producer = Producer(producer_config(settings))

    def publish(self, record: OutgoingRecord, on_delivery: DeliveryCallback) -> None:
        """Queue one record; `on_delivery` runs from `poll`/`flush` on the caller's thread.

        Raises `KafkaException` when librdkafka refuses the record outright (e.g. too large).
        """
        while True:
            try:
                self._producer.produce(
                    record.topic,
                    value=record.value,
                    key=record.key,
                    headers=record.headers or None,
                    on_delivery=lambda error, _message: on_delivery(error),
                )
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                self._producer.poll(0.1)

    def poll(self, timeout_s: float = 0.0) -> int:
        """Run delivery callbacks; returns how many ran."""
        return self._producer.poll(timeout_s)

    def flush(self, timeout_s: float) -> int:
        """Wait for outstanding deliveries; returns how many records are still undelivered."""
        return self._producer.flush(timeout_s)

    def __len__(self) -> int:
        return len(self._producer)


def is_too_large(error: KafkaError | KafkaException) -> bool:
    code = (error.args[0] if isinstance(error, KafkaException) else error).code()
    return code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE)
