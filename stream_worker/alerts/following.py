"""The watch list as the alerts service sees it: read whole at the start, then followed live.

`load` notes each partition's end, reads the whole compacted topic (store.py), then assigns a
side consumer (no group, nothing committed) at the ends noted first: records written during the
read are applied again, in order, which leaves the same list. `poll` (each turn of the service's
loop, never blocking) applies entries and tombstones as they come and rebuilds the `Matcher`
when the list changed, so a change takes effect within a turn or two. A watch-list topic that
does not exist yet is an empty list; the follower looks for it again every few seconds and reads
it from its beginning once it appears (it never creates it).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from stream_worker.alerts.matching import Matcher
from stream_worker.alerts.store import DEFAULT_TIMEOUT_S, WatchlistStoreError, read_watchlist
from stream_worker.alerts.watchlist import WatchEntry, WatchRecordError, decode_record
from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer

log = logging.getLogger(__name__)

LOOK_AGAIN_S = 5.0  # how often a missing watch-list topic is looked for
POLL_BATCH = 500


class WatchlistFollower:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        default_max_distance: float,
        config: Mapping[str, object] | None = None,
        on_skipped: Callable[[], None] = lambda: None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.topic = topic
        self.default_max_distance = default_max_distance
        self.entries: dict[str, WatchEntry] = {}
        self.matcher = Matcher({}, default_max_distance)
        self.loaded = False
        self.changes = 0  # records applied after the load
        self._bootstrap = bootstrap_servers
        self._config = dict(config or {})
        self._on_skipped = on_skipped
        self._timeout_s = timeout_s
        self._gaps = GapHealer()
        self._assigned = False
        self._looked_at = 0.0
        self._consumer = Consumer(
            {
                **self._config,
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"stream-worker-alerts-watchlist-{uuid.uuid4().hex}",  # never joined
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )

    def load(self) -> None:
        """Read the whole watch list; WatchlistStoreError when the broker does not answer in time."""
        ends = self._ends()
        snapshot = read_watchlist(self._bootstrap, self.topic, self._config, self._timeout_s)
        for skipped in snapshot.skipped:
            self._on_skipped()
            log.warning("skipped a watch-list record", extra={"record": str(skipped)})
        self.entries = dict(snapshot.entries)
        self.matcher = Matcher(self.entries, self.default_max_distance)
        if ends is not None:
            self._assign(ends)
        self.loaded = True
        log.info(
            "watch list loaded",
            extra={
                "entries": len(self.entries),
                "skipped": len(snapshot.skipped),
                "topic_exists": ends is not None,
            },
        )

    def _ends(self) -> dict[int, int] | None:
        """Each partition's high watermark; None when the topic does not exist."""
        try:
            # All topics, not this one by name: asking for a missing topic by name may create it.
            metadata = self._consumer.list_topics(timeout=self._timeout_s).topics.get(self.topic)
            if metadata is None or metadata.error is not None or not metadata.partitions:
                return None
            return {
                partition: self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=self._timeout_s
                )[1]
                for partition in sorted(metadata.partitions)
            }
        except KafkaException as error:
            raise WatchlistStoreError(f"cannot read the offsets of topic {self.topic!r}: {error}") from error

    def _assign(self, starts: Mapping[int, int | None]) -> None:
        parts = [
            TopicPartition(self.topic, p, OFFSET_BEGINNING if start is None else start)
            for p, start in starts.items()
        ]
        self._gaps.assign(
            [(self.topic, p) for p in starts],
            {(self.topic, p): start for p, start in starts.items() if start is not None},
        )
        self._consumer.assign(parts)
        self._assigned = True

    def poll(self) -> bool:
        """Apply what was written since; True when the list changed (the matcher is rebuilt)."""
        if not self._assigned:
            if time.monotonic() - self._looked_at < LOOK_AGAIN_S:
                return False
            self._looked_at = time.monotonic()
            ends = self._ends()
            if ends is None:
                return False
            self._assign(dict.fromkeys(ends))
            log.info("watch-list topic appeared: following it", extra={"topic": self.topic})
        changed = False
        for message in kafka.consume_records(self._consumer, POLL_BATCH, 0, self._gaps):
            self.changes += 1
            try:
                plate, entry = decode_record(message.key(), message.value())
            except WatchRecordError as error:
                self._on_skipped()
                log.warning(
                    "skipped a watch-list record",
                    extra={"partition": message.partition(), "offset": message.offset(), "error": str(error)},
                )
                continue
            if entry is None:
                changed |= self.entries.pop(plate, None) is not None
            elif self.entries.get(plate) != entry:
                self.entries[plate] = entry
                changed = True
        if changed:
            self.matcher = Matcher(self.entries, self.default_max_distance)
            log.info("watch list changed", extra={"entries": len(self.entries)})
        return changed

    def close(self) -> None:
        self._consumer.close()
