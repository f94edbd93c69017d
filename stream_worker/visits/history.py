"""The visits published by earlier runs, read back whole from the visits topic before the first
sighting: the open visits, their overstays and the sightings already decided (pairing.py `apply`).

Unlike the alerts' history, this one is not best effort: an open visit missed here would be lost
(its exit unmatched), so `load` reads every partition to the end it had when the load began and
says so; the service reads no sighting before it has. A topic that does not exist yet has nothing
to read. Records that are not PlateVisits are skipped and counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from confluent_kafka import KafkaException, TopicPartition
from pydantic import ValidationError

from stream_worker.contracts import PlateVisit
from stream_worker.service import kafka
from stream_worker.service.compacted import CompactedTopicError, side_consumer, topic_partitions
from stream_worker.service.gaps import GapHealer
from stream_worker.visits.pairing import Visits

log = logging.getLogger(__name__)

TIMEOUT_S = 10.0
BATCH = 1000
WAIT_S = 0.2


class VisitHistory:
    def __init__(
        self, bootstrap_servers: str, topic: str, config: Mapping[str, object] | None = None
    ) -> None:
        self.topic = topic
        self.loaded = False
        self.events = 0
        self.skipped = 0
        self._consumer = side_consumer(bootstrap_servers, config, "visits-history")
        self._gaps = GapHealer()
        self._ends: dict[int, int] | None = None

    def load(self, visits: Visits, budget_s: float = TIMEOUT_S) -> bool:
        """Read on for at most `budget_s`; True (and `loaded`) once every partition is read to its end."""
        try:
            if self._ends is None:
                self._ends = self._assign()
            deadline = time.monotonic() + budget_s
            while self._ends and time.monotonic() < deadline:
                for message in kafka.consume_records(self._consumer, BATCH, WAIT_S, self._gaps):
                    self._apply(message.value(), visits)
                    if message.offset() >= self._ends.get(message.partition(), 0) - 1:
                        self._ends.pop(message.partition(), None)
        except (KafkaException, CompactedTopicError) as error:
            log.warning("cannot read the visits history yet, trying again", extra={"error": str(error)})
            return False
        if self._ends:
            return False
        self.loaded = True
        log.info(
            "visits history read",
            extra={"topic": self.topic, "events": self.events, "skipped": self.skipped, "open": len(visits)},
        )
        return True

    def _assign(self) -> dict[int, int]:
        """Every partition from its start; the ends of those with records to read."""
        partitions = topic_partitions(self._consumer, self.topic, TIMEOUT_S)
        if partitions is None:
            return {}
        parts, ends, starts = [], {}, {}
        for partition in partitions:
            low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=TIMEOUT_S
            )
            parts.append(TopicPartition(self.topic, partition, low))
            starts[(self.topic, partition)] = low
            if high > low:
                ends[partition] = high
        self._gaps.assign(starts, starts)
        self._consumer.assign(parts)
        return ends

    def _apply(self, value: bytes | None, visits: Visits) -> None:
        try:
            event = PlateVisit.model_validate_json(value or b"")
        except ValidationError:
            self.skipped += 1
            return
        visits.apply(event)
        self.events += 1

    def close(self) -> None:
        self._consumer.close()
