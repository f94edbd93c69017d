"""A consumed record as the services that read plates, sightings and alerts keep it, and the one way
they decode it: counted, then its contract, or counted invalid, logged and skipped."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

# A pass's records are small JSON: the default prefetch (64 MiB per partition) is far too much.
DEFAULT_PREFETCH_KBYTES = 4 * 1024
MAX_ERROR_CHARS = 300  # a log line quotes the problem, never a whole record

Model = TypeVar("Model")


@dataclass(frozen=True, slots=True)
class PlateRecord:
    partition: int
    offset: int
    value: bytes | None


class Count(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class Decoder(Generic[Model]):
    """One input topic's records: each counted in `consumed`, then parsed; one that `parse` refuses
    (with one of `errors`) is counted in `invalid`, logged and None: its offset is still consumed,
    so a bad record never stops a service nor holds back its commits."""

    def __init__(
        self,
        what: str,
        topic: str,
        parse: Callable[[PlateRecord], Model],
        consumed: Count,
        invalid: Count,
        log: logging.Logger,
        errors: tuple[type[Exception], ...] = (ValidationError,),
    ) -> None:
        self.what, self.topic, self._parse = what, topic, parse
        self._consumed, self._invalid, self._log, self._errors = consumed, invalid, log, errors

    @classmethod
    def of(
        cls, contract: type[BaseModel], topic: str, consumed: Count, invalid: Count, log: logging.Logger
    ) -> Decoder[Model]:
        """A decoder of a JSON contract (PlateEvent, PlateSighting, PlateAlert)."""
        return cls(
            contract.__name__,
            topic,
            lambda record: contract.model_validate_json(record.value or b""),  # type: ignore[return-value]
            consumed,
            invalid,
            log,
        )

    def __call__(self, record: PlateRecord) -> Model | None:
        self._consumed.inc()
        try:
            return self._parse(record)
        except self._errors as error:
            self._invalid.inc()
            self._log.warning(
                f"skipped a record that is not a {self.what}",
                extra={
                    "topic": self.topic,
                    "partition": record.partition,
                    "offset": record.offset,
                    "error": str(error)[:MAX_ERROR_CHARS],
                },
            )
            return None
