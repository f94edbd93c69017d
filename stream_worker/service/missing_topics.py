"""The subscribed topics the broker does not have yet: each said once, by name, and looked for every
few seconds until it exists.

librdkafka reports a subscribed topic that does not exist once (UNKNOWN_TOPIC_OR_PART) and looks
for it again only at its next metadata refresh (`topic.metadata.refresh.interval.ms`, 5 minutes by
default): a service started before its input topic would read nothing for minutes. While a topic
is missing, the consumer asks the broker for the cluster's metadata every `CHECK_INTERVAL_S`;
librdkafka checks the group's subscription against that answer, so the consumer joins the topic's
partitions as soon as it exists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 2.0
METADATA_TIMEOUT_S = 2.0
MISSING_CODES = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


def is_missing_topic(error: KafkaError) -> bool:
    return error.code() in MISSING_CODES


class MissingTopics:
    """`saw(topic)` when the consumer reports a subscribed topic missing; `check(client)` at each
    poll (it asks the broker at most every `interval_s`)."""

    def __init__(self, interval_s: float = CHECK_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self.topics: set[str] = set()
        self._interval_s = interval_s
        self._clock = clock
        self._checked_at = float("-inf")

    def saw(self, topic: str) -> None:
        if topic in self.topics:
            return
        self.topics.add(topic)
        self._checked_at = self._clock()
        log.warning(
            "subscribed topic does not exist: nothing of it is read until it is created",
            extra={"topic": topic, "looked_for_every_s": self._interval_s},
        )

    def check(self, client: Any) -> list[str]:
        """The missing topics that exist now (each logged), after asking the broker when due."""
        if not self.topics or self._clock() - self._checked_at < self._interval_s:
            return []
        self._checked_at = self._clock()
        try:
            metadata = client.list_topics(timeout=METADATA_TIMEOUT_S).topics
        except KafkaException as error:
            log.debug("cannot read the cluster's topics", extra={"error": str(error)})
            return []
        found = [
            topic
            for topic in sorted(self.topics)
            if (known := metadata.get(topic)) is not None and known.error is None and known.partitions
        ]
        for topic in found:
            self.topics.discard(topic)
            log.info("subscribed topic exists now: reading it", extra={"topic": topic})
        return found
