"""The services' group consumer: one topic (or a few), manual commits, and what owning partitions entails.

Around librdkafka's Consumer it keeps, for the service on top:
- ownership: which partitions are assigned now, each with an assignment epoch (bumped at every
  assignment and every revocation or loss), so that work started under an earlier assignment of
  a partition is recognised and dropped;
- backpressure: every owned partition paused at a limit of pending records, resumed below half
  of it; a paused partition is resumed before it is forgotten, because librdkafka keeps a pause
  through its revocation and a later re-assignment (the partition would never be fetched again);
- gap healing: records in offset order per partition (service/gaps.py), the gaps counted;
- missing topics: a subscribed topic the broker lacks, said once and joined once it exists;
- consumer lag from librdkafka's statistics, per owned partition.

The rest of a service sees its own record type (`_record`, in the subclass) and `(topic,
partition)` tuples, never librdkafka types. Rebalance callbacks run inside `consume`: the
service's `on_revoke` runs while the partitions are still owned (to drain and commit them),
`on_lost` after they are forgotten (nothing of theirs may be committed).
"""

from __future__ import annotations

import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer
from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.missing_topics import MissingTopics

log = logging.getLogger(__name__)

COMMITTED_TIMEOUT_S = 10.0

R = TypeVar("R")
PartitionsCallback = Callable[[list[Partition]], None]
ClientFactory = Callable[[dict[str, Any]], Any]  # confluent_kafka.Consumer, or a test's fake


class GroupConsumer(ABC, Generic[R]):
    def __init__(
        self,
        config: Mapping[str, object],
        topic: str | Sequence[str],
        metrics: ServiceMetrics,
        on_assign: PartitionsCallback,
        on_revoke: PartitionsCallback,
        on_lost: PartitionsCallback,
        client: ClientFactory = Consumer,
    ) -> None:
        self.topics = [topic] if isinstance(topic, str) else list(topic)
        self.topic = self.topics[0]
        self.closing = False
        self.gaps = GapHealer(on_settled=metrics.count_gap)
        self.missing = MissingTopics()
        self._metrics = metrics
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        self._epochs: dict[Partition, int] = {}
        self._owned: set[Partition] = set()
        self._paused: set[Partition] = set()
        for consumed in self.topics:
            metrics.show_consumed_topic(consumed)
        self._client = client({**config, "stats_cb": self._statistics})
        self._client.subscribe(
            self.topics, on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )

    @abstractmethod
    def _record(self, message: Message) -> R:
        """The service's record of one consumed message."""

    def _start_positions(self, client: Any, parts: list[TopicPartition]) -> dict[Partition, int]:
        """Where reading starts on newly assigned partitions, where the subclass decides it (it
        then assigns them itself). By default the committed position, unknown here: gap healing
        takes a partition's first record as its start."""
        return {}

    # --- librdkafka's callbacks -------------------------------------------------------------

    def _assigned(self, client: Any, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self.gaps.assign(partitions, self._start_positions(client, parts))
        for partition in partitions:
            self._epochs[partition] = self._epochs.get(partition, 0) + 1
            self._owned.add(partition)
        self._on_assign(partitions)

    def _revoked(self, _client: Any, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self._on_revoke([p for p in partitions if p in self._owned])
        self._forget(partitions)

    def _lost(self, _client: Any, parts: list[TopicPartition]) -> None:
        partitions = kafka.partitions(parts)
        self._forget(partitions)
        self._on_lost(partitions)

    def _statistics(self, statistics_json: str) -> None:
        for (topic, partition), lag in kafka.lag_from_statistics(statistics_json).items():
            if (topic, partition) in self._owned:
                self._metrics.consumer_lag.labels(topic, str(partition)).set(lag)

    def _forget(self, partitions: list[Partition]) -> None:
        if (paused := [p for p in partitions if p in self._paused]) and not self.closing:
            try:
                self._client.resume([TopicPartition(t, p) for t, p in paused])
            except KafkaException as error:
                log.warning("could not resume revoked partitions", extra={"error": str(error)})
        self.gaps.forget(partitions)
        for partition in partitions:
            self._epochs[partition] = self._epochs.get(partition, 0) + 1
            self._owned.discard(partition)
            self._paused.discard(partition)
            with contextlib.suppress(KeyError):  # no lag reported for it yet
                self._metrics.consumer_lag.remove(partition[0], str(partition[1]))

    # --- reading ----------------------------------------------------------------------------

    def consume(self, max_records: int, timeout_s: float) -> list[R]:
        """Up to `max_records` records, in offset order per partition (see service/gaps.py);
        broker-side errors are logged, a fatal one raises; a subscribed topic that does not exist
        is said once and looked for every few seconds (service/missing_topics.py)."""
        self.missing.check(self._client)
        messages = kafka.consume_records(self._client, max_records, timeout_s, self.gaps, self.missing)
        return [self._record(message) for message in messages]

    # --- ownership --------------------------------------------------------------------------

    def owns(self, partition: Partition) -> bool:
        return partition in self._owned

    def assigned(self) -> list[Partition]:
        return sorted(self._owned)

    def committed(
        self, partitions: list[Partition], timeout_s: float = COMMITTED_TIMEOUT_S
    ) -> dict[Partition, int]:
        """The group's committed positions of `partitions`, those with none left out (a broker
        request; it may be made in a rebalance callback). Raises `KafkaException` on failure."""
        parts = self._client.committed([TopicPartition(t, p) for t, p in partitions], timeout=timeout_s)
        return {(part.topic, part.partition): part.offset for part in parts if part.offset >= 0}

    def epoch(self, partition: Partition) -> int:
        """The current assignment's epoch of an owned partition."""
        return self._epochs[partition]

    def is_current(self, partition: Partition, epoch: int) -> bool:
        """True when `partition` is still owned under the assignment that had `epoch`."""
        return partition in self._owned and self._epochs.get(partition) == epoch

    # --- flow control -----------------------------------------------------------------------

    def throttle(self, pending: int, limit: int) -> bool:
        """Pause every owned partition at `limit` pending records and resume once at most half
        of it is pending; True while paused."""
        if pending >= limit or (self._paused and pending > limit // 2):
            if newly := self._owned - self._paused:
                self._client.pause([TopicPartition(t, p) for t, p in newly])
                self._paused |= newly
                log.info("backpressure: consumption paused", extra={"pending": pending})
        elif self._paused:
            self._client.resume([TopicPartition(t, p) for t, p in self._paused])
            self._paused.clear()
            log.info("backpressure: consumption resumed", extra={"pending": pending})
        return bool(self._paused)

    @property
    def throttled(self) -> bool:
        return bool(self._paused)

    def pause_all(self) -> None:
        """Stop fetching every owned partition, for good (a shutdown)."""
        self._client.pause([TopicPartition(t, p) for t, p in self._owned])
        self._paused |= self._owned

    # --- commits and the end -----------------------------------------------------------------

    def commit(self, positions: Mapping[Partition, int]) -> list[TopicPartition]:
        """Synchronous. Raises `KafkaException` when the whole request fails; otherwise each
        returned partition's `.error` says whether its own commit failed (service/commits.py)."""
        offsets = [TopicPartition(t, p, offset) for (t, p), offset in positions.items()]
        return self._client.commit(offsets=offsets, asynchronous=False) or []

    def close(self) -> None:
        """Leave the group; its revocation callback runs meanwhile, with `closing` set."""
        self.closing = True
        self._client.close()
