"""The store's dead-letter topic (`--dlq-topic`, store.dlq): a sighting or an alert the store cannot
write (not the contract, over a column's limit, refused by the database alone) is published there
with the reason in its headers (`DeadLetterHeaders`, stage `store`), so that it is neither retried
for ever nor lost: its offset is committed once the broker acknowledged the dead letter.

Dead letters are rare, so they are sent synchronously before the batch's offsets are committed; a
broker that does not take them fails the batch like a database would (written again later).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException

from stream_worker.contracts import ErrorReason, ErrorStage
from stream_worker.service import kafka
from stream_worker.service.dead_letters import dead_letter_headers, is_too_large, without_value
from stream_worker.service.publisher import OutputRecord, Publisher
from stream_worker.store.consumer import StoreRecord
from stream_worker.store.metrics import StoreMetrics
from stream_worker.store.settings import StoreSettings

log = logging.getLogger("stream_worker.store")

FLUSH_S = 10.0


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A consumed record the store will not write, and why."""

    record: StoreRecord
    reason: ErrorReason
    detail: str


class DeadLetterError(RuntimeError):
    """The broker did not take the dead letters: the batch is not committed, it is tried again."""


class DeadLetters:
    def __init__(self, settings: StoreSettings, metrics: StoreMetrics) -> None:
        self.topic = settings.dlq_topic
        self.metrics = metrics
        self._publisher: Publisher | None = None
        self._config = kafka.producer_config(settings)

    def send(self, letters: Sequence[DeadLetter]) -> None:
        """Publish `letters` and wait for the broker; DeadLetterError when it did not take them all."""
        if not letters:
            return
        if self._publisher is None:  # made on the first dead letter: most stores never need one
            self._publisher = Publisher(self._config)
        outcomes: dict[int, KafkaError | None] = {}
        records = [self._record(letter) for letter in letters]
        for index, record in enumerate(records):
            self._publish(index, record, outcomes)
        self._flush()
        retry = [i for i, error in outcomes.items() if error is not None and is_too_large(error)]
        for index in retry:  # the record with its value was too large: the reason alone
            records[index] = _without_value(records[index])
            self._publish(index, records[index], outcomes)
        if retry:
            self._flush()
        failed = [error for error in outcomes.values() if error is not None]
        if failed or len(outcomes) < len(records):
            raise DeadLetterError(
                f"dead-letter topic {self.topic!r}: {failed[0].str() if failed else 'no answer'}"
            )
        for letter in letters:
            self.metrics.dead_letters.labels(letter.record.topic, letter.reason.value).inc()
            log.warning(
                "record dead-lettered",
                extra={
                    "topic": letter.record.topic,
                    "partition": letter.record.partition,
                    "offset": letter.record.offset,
                    "reason": letter.reason.value,
                    "detail": letter.detail[:300],
                    "dlq_topic": self.topic,
                },
            )

    def close(self) -> None:
        if self._publisher is not None:
            self._publisher.flush(FLUSH_S)

    def _record(self, letter: DeadLetter) -> OutputRecord:
        record = letter.record
        headers = dead_letter_headers(
            record.headers,
            ErrorStage.STORE,
            letter.reason,
            letter.detail,
            record.topic,
            record.partition,
            record.offset,
        )
        return OutputRecord(self.topic, record.key, record.value, headers)

    def _publish(self, index: int, record: OutputRecord, outcomes: dict[int, KafkaError | None]) -> None:
        assert self._publisher is not None
        outcomes.pop(index, None)

        def delivered(error: KafkaError | None) -> None:
            outcomes[index] = error

        try:
            self._publisher.publish(record, delivered)
        except KafkaException as error:
            if record.value and is_too_large(error):
                self._publish(index, _without_value(record), outcomes)
            else:
                raise DeadLetterError(f"dead-letter topic {self.topic!r}: {error}") from error

    def _flush(self) -> None:
        assert self._publisher is not None
        self._publisher.flush(FLUSH_S)


def _without_value(record: OutputRecord) -> OutputRecord:
    return OutputRecord(record.topic, record.key, None, without_value(record.headers, record.value))
