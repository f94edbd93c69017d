"""The notify service's delivery log as the console shows it: the plain `notify.deliveries` topic
followed from the console's start into a ring of the newest records in memory, so a page answers
from memory however long the topic is. The start reads back the last TAIL records of each
partition (what a restarted console shows at first); a record that is not a `NotifyDelivery` is
left out (counted); a missing topic is an empty log (notify has delivered nothing), looked for
again every few seconds.

Kept in memory, not in the store's database: the log is for looking at what happened lately, the
topic keeps it for as long as its retention says, and a ring needs no table, no migration and no
second consumer group beside the store's."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping

from confluent_kafka import Consumer, TopicPartition
from pydantic import ValidationError

from stream_worker.contracts.notify import NotifyDelivery
from stream_worker.service import kafka
from stream_worker.service.compacted import (
    FOLLOW_FETCH_WAIT_MS,
    LOOK_AGAIN_S,
    CompactedTopicError,
    side_consumer,
    topic_partitions,
)

log = logging.getLogger(__name__)

TAIL = 100  # records read back from each partition's end at the start
RING = 200  # the newest deliveries kept (the most the API lists at once)
RETRY_S = 2.0


class DeliveryLog:
    """A thread that follows the deliveries topic; `read` gives the newest first."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        config: Mapping[str, str],
        timeout_s: float,
        on_skipped: Callable[[], None] = lambda: None,
        size: int = RING,
    ) -> None:
        self.topic = topic
        self._bootstrap = bootstrap_servers
        self._config = {"fetch.wait.max.ms": FOLLOW_FETCH_WAIT_MS, **config}
        self._timeout_s = timeout_s
        self._on_skipped = on_skipped
        self._ring: deque[NotifyDelivery] = deque(maxlen=size)
        self._loaded = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"log-{topic}", daemon=True)

    def start(self) -> DeliveryLog:
        self._thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def read(self, limit: int, timeout_s: float) -> list[NotifyDelivery]:
        """The newest `limit` deliveries; CompactedTopicError when the topic was never read."""
        if not self._loaded.wait(timeout_s):
            raise CompactedTopicError(f"the delivery log (topic {self.topic!r}) has not been read yet")
        found = sorted(list(self._ring), key=lambda delivery: delivery.at, reverse=True)
        return found[:limit]

    def _run(self) -> None:
        while not self._stop.is_set():
            consumer = side_consumer(self._bootstrap, self._config, "console-deliveries")
            try:
                self._follow(consumer)
            except Exception:  # a broker away, a fatal consumer error: start again, never die
                log.exception("following the delivery log failed; starting again")
                self._stop.wait(RETRY_S)
            finally:
                consumer.close()

    def _follow(self, consumer: Consumer) -> None:
        ends = self._assign(consumer)
        while ends is None:
            self._loaded.set()  # no topic: nothing delivered yet
            if self._stop.wait(LOOK_AGAIN_S):
                return
            ends = self._assign(consumer)
        self._ring.clear()  # read back again from the tails (after a restart of the thread)
        while not self._stop.is_set():
            for message in kafka.consume_records(consumer, 500, 0.5):
                if message.offset() >= ends.get(message.partition(), 0) - 1:
                    ends.pop(message.partition(), None)  # read back to where it ended at the start
                try:
                    self._ring.append(NotifyDelivery.model_validate_json(message.value() or b""))
                except ValidationError:
                    self._on_skipped()
                    log.warning(
                        "skipped a record that is not a delivery",
                        extra={
                            "topic": self.topic,
                            "partition": message.partition(),
                            "offset": message.offset(),
                        },
                    )
            if not ends:
                self._loaded.set()

    def _assign(self, consumer: Consumer) -> dict[int, int] | None:
        """Assign each partition's last TAIL records; the ends to read up to (None: no topic)."""
        partitions = topic_partitions(consumer, self.topic, self._timeout_s)
        if partitions is None:
            return None
        ends: dict[int, int] = {}
        assignment = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=self._timeout_s
            )
            assignment.append(TopicPartition(self.topic, partition, max(low, high - TAIL)))
            if high > low:
                ends[partition] = high
        consumer.assign(assignment)
        return ends
