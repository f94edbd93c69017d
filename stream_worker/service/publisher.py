"""The services' producer: records queued with a per-record delivery callback.

The callback is what lets a service commit its input: a consumed offset is committed only once
what it produced is acknowledged by the broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import KafkaError, Producer

# Delivery outcome: None when the broker acknowledged the record, else the error.
DeliveryCallback = Callable[[KafkaError | None], None]


class Record(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """A `Record` as a service's output is: a keyed value (a sighting, an alert)."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


class Publisher:
    def __init__(self, config: Mapping[str, object]) -> None:
        self._producer = Producer(dict(config))

    def publish(self, record: Record, on_delivery: DeliveryCallback) -> None:
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
