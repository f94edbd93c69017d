"""Reading whole topics from the side: every partition assigned, no group, nothing committed.

What `stream-worker tail` and the demo's viewer read with, so that watching a topic never
disturbs the services' groups. Records come in offset order per partition with the offsets the
local broker skips fetched again (service/gaps.py), as the services get them: a viewer that
missed a record would report a frame as lost that the worker answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Message, TopicPartition

from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer

METADATA_TIMEOUT_S = 30.0


class TopicNotFoundError(LookupError):
    """A topic to read does not exist on the broker."""


class TopicReader:
    def __init__(
        self,
        bootstrap_servers: str,
        topics: Sequence[str],
        from_beginning: bool = True,
        config: Mapping[str, object] | None = None,
        gaps: GapHealer | None = None,
    ) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"stream-worker-reader-{uuid.uuid4().hex}",  # never joined: assign only
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                **(config or {}),
            }
        )
        self.gaps = gaps if gaps is not None else GapHealer()
        try:
            self._assign(topics, from_beginning)
        except BaseException:
            self._consumer.close()
            raise

    def _assign(self, topics: Sequence[str], from_beginning: bool) -> None:
        parts = []
        for topic in topics:
            metadata = self._consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                reason = metadata.error.str() if metadata is not None and metadata.error else "no partitions"
                raise TopicNotFoundError(f"topic {topic!r} not found on the broker ({reason})")
            parts += [TopicPartition(topic, partition) for partition in sorted(metadata.partitions)]
        starts: dict[kafka.Partition, int] = {}
        for part in parts:
            if from_beginning:
                # The low watermark is where reading starts: a record skipped there is a gap too.
                low, _ = self._consumer.get_watermark_offsets(part, timeout=METADATA_TIMEOUT_S)
                starts[(part.topic, part.partition)] = low
            part.offset = OFFSET_BEGINNING if from_beginning else OFFSET_END
        # From the end, the first record sets the expected offset: the local broker's high
        # watermark can read low (docs/limitations.md).
        self.gaps.assign(kafka.partitions(parts), starts)
        self._consumer.assign(parts)

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        """Up to `max_records` records, in offset order per partition; errors are logged, a
        fatal one raises."""
        return kafka.consume_records(self._consumer, max_records, timeout_s, self.gaps)

    def close(self) -> None:
        self._consumer.close()
