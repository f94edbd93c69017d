"""Dead letters, as the worker (frames.dlq) and the history store (store.dlq) write them: the
record's own key, value and headers, plus why and where it came from (`DeadLetterHeaders`), so that
a bad record is kept where people can see it instead of crashing a service or vanishing."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from stream_worker.contracts import DeadLetterHeader, ErrorReason, ErrorStage

Headers = list[tuple[str, bytes | None]]
_DEAD_LETTER_NAMES = frozenset(header.value for header in DeadLetterHeader)
MAX_DETAIL_CHARS = 1000  # a detail quotes the record's problem, never the whole record


def dead_letter_headers(
    own: Headers, stage: ErrorStage, reason: ErrorReason, detail: str, topic: str, partition: int, offset: int
) -> Headers:
    """The record's own headers (stale error headers replaced) and the error and source headers."""
    headers = [(name, value) for name, value in own if name not in _DEAD_LETTER_NAMES]
    return [
        *headers,
        (DeadLetterHeader.STAGE.value, stage.value.encode()),
        (DeadLetterHeader.REASON.value, reason.value.encode()),
        (DeadLetterHeader.DETAIL.value, detail[:MAX_DETAIL_CHARS].encode()),
        (DeadLetterHeader.SOURCE_TOPIC.value, topic.encode()),
        (DeadLetterHeader.SOURCE_PARTITION.value, str(partition).encode()),
        (DeadLetterHeader.SOURCE_OFFSET.value, str(offset).encode()),
    ]


def without_value(headers: Headers, value: bytes | None) -> Headers:
    """The headers of a dead letter sent without its value (the broker refused it as too large)."""
    return [*headers, (DeadLetterHeader.VALUE_OMITTED.value, str(len(value or b"")).encode())]


def is_too_large(error: KafkaError | KafkaException) -> bool:
    """Whether the broker (or librdkafka) refused a record for its size."""
    code = (error.args[0] if isinstance(error, KafkaException) else error).code()
    return code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE)
