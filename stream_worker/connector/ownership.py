"""Which cameras this replica reads: a consumer group over the partitioned `cameras` topic, used for
its assignment only (no record is processed, no offset committed).

Every replica subscribes with the same group id; the group gives each partition to exactly one of
them, and a camera belongs to the partition its id hashes to with Kafka's default partitioner
(partitioner.py: the one its settings record was written with). When a replica dies, its session
times out, the group rebalances and the others open its cameras. The cooperative-sticky
assignor moves only the partitions that must move, so a replica joining or leaving does not
restart the cameras that stay where they are.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from stream_worker.connector.partitioner import partition_for
from stream_worker.connector.settings import ConnectorSettings
from stream_worker.service import kafka
from stream_worker.service.compacted import FOLLOW_FETCH_WAIT_MS, CompactedTopicError, topic_partitions

log = logging.getLogger("stream_worker.connector")

METADATA_TIMEOUT_S = 10.0


class Ownership:
    """`poll` often (it keeps the membership and runs the callbacks); `owns(camera_id)`."""

    def __init__(
        self,
        settings: ConnectorSettings,
        on_assign: Callable[[list[int]], None],
        on_revoke: Callable[[list[int]], None],
    ) -> None:
        self.topic = settings.cameras_topic
        self.partitions: frozenset[int] = frozenset()
        self.partition_count: int | None = None
        self.joined = False  # the group gave an assignment (maybe empty) at least once
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        config = kafka.consumer_config(
            settings,
            settings.group_id,
            **{
                "partition.assignment.strategy": "cooperative-sticky",
                "topic.metadata.refresh.interval.ms": 5000,  # a topic created later is seen soon
                "fetch.wait.max.ms": FOLLOW_FETCH_WAIT_MS,  # its records are not needed (see poll)
            },
        )
        config["statistics.interval.ms"] = 0
        config["auto.offset.reset"] = "latest"  # nothing is read from it: the assignment is the point
        self._consumer = Consumer(config)
        self._consumer.subscribe(
            [self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )

    def owns(self, camera_id: str) -> bool:
        count = self.partition_count
        return count is not None and partition_for(camera_id.encode(), count) in self.partitions

    def poll(self) -> None:
        """Keep the membership; the records themselves are not needed (settings come from the
        follower, which reads every partition)."""
        for message in self._consumer.consume(100, 0):
            error = message.error()
            if error is not None and error.fatal():
                raise KafkaException(error)
            if error is not None and error.code() not in (
                KafkaError._PARTITION_EOF,
                KafkaError.UNKNOWN_TOPIC_OR_PART,
            ):
                log.debug("cameras group consumer error", extra={"error": error.str()})

    def close(self) -> None:
        self._consumer.close()

    def refresh_partition_count(self) -> bool:
        """Read how many partitions the cameras topic has; False when the broker did not say."""
        try:
            partitions = topic_partitions(self._consumer, self.topic, METADATA_TIMEOUT_S)
        except CompactedTopicError as error:
            log.warning("cannot read the cameras topic's partitions", extra={"error": str(error)})
            return False
        if partitions is None:
            return False
        self.partition_count = len(partitions)
        return True

    def _assigned(self, _consumer: Consumer, assigned: list[TopicPartition]) -> None:
        self.refresh_partition_count()  # partitions added to the topic come with a rebalance
        added = [item.partition for item in assigned]
        self.partitions = self.partitions | frozenset(added)
        self.joined = True
        log.info(
            "partitions assigned",
            extra={
                "partitions": sorted(self.partitions),
                "added": added,
                "partition_count": self.partition_count,
            },
        )
        self._on_assign(added)

    def _revoked(self, _consumer: Consumer, revoked: list[TopicPartition]) -> None:
        removed = [item.partition for item in revoked]
        self.partitions = self.partitions - frozenset(removed)
        log.info("partitions revoked", extra={"partitions": sorted(self.partitions), "removed": removed})
        self._on_revoke(removed)

    def _lost(self, _consumer: Consumer, lost: list[TopicPartition]) -> None:
        removed = [item.partition for item in lost]
        self.partitions = self.partitions - frozenset(removed)
        log.warning("partitions lost", extra={"partitions": sorted(self.partitions), "removed": removed})
        self._on_revoke(removed)
