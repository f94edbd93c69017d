"""Read the whole watch list from its compacted topic, and write entries and removals to it.

Reading assigns every partition (no consumer group, nothing committed) from the beginning up to
the end offsets seen at the start, applying records in offset order: the latest record of a
plate wins, a tombstone removes it. Records that do not decode are skipped and reported with
their partition and offset, so one bad producer cannot hide the rest of the list.

Writing uses the idempotent producer with acks=all and waits for every delivery: a command that
returns without an error has the whole change stored. Keys go through librdkafka's `murmur2_random`
partitioner, Kafka's Java default, so every client puts a plate in the same partition, which
compaction and the last-record-wins reading both rely on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from stream_worker.alerts.watchlist import (
    WatchEntry,
    WatchRecordError,
    decode_record,
    encode_entry,
    encode_removal,
)

DEFAULT_TOPIC = "watchlist"
DEFAULT_TIMEOUT_S = 30.0
TOPIC_CONFIG = {"cleanup.policy": "compact"}
# A watch list is small and read whole; one partition keeps its records in one order.
DEFAULT_PARTITIONS = 1
_POLL_BATCH = 1000
_POLL_WAIT_S = 0.2
_DRAIN_WAIT_S = 0.05


class WatchlistStoreError(RuntimeError):
    """The broker could not be reached, refused a request, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    partition: int
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"partition {self.partition} offset {self.offset}: {self.reason}"


@dataclass(slots=True)
class WatchlistSnapshot:
    """The watch list as read: entries by plate, the records skipped, whether the topic exists."""

    entries: dict[str, WatchEntry] = field(default_factory=dict)
    skipped: list[SkippedRecord] = field(default_factory=list)
    records: int = 0
    topic_exists: bool = True


def _client_config(bootstrap_servers: str, config: Mapping[str, str] | None) -> dict[str, object]:
    return {**(config or {}), "bootstrap.servers": bootstrap_servers}


def _partitions(client: Consumer | AdminClient, topic: str, timeout_s: float) -> list[int] | None:
    """The topic's partition ids, or None when the broker does not know the topic."""
    try:
        # All topics, not this one by name: asking for a missing topic by name makes a broker with
        # auto.create.topics.enable create it, uncompacted.
        metadata = client.list_topics(timeout=timeout_s).topics.get(topic)
    except KafkaException as error:
        raise WatchlistStoreError(f"cannot read the metadata of topic {topic!r}: {error}") from error
    if metadata is None or metadata.error is not None or not metadata.partitions:
        if metadata is not None and metadata.error is not None:
            code = metadata.error.code()
            if code not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise WatchlistStoreError(f"topic {topic!r}: {metadata.error.str()}")
        return None
    return sorted(metadata.partitions)


def ensure_topic(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> bool:
    """Create the compacted topic unless it exists; True when this call created it. An existing
    topic is left as it is."""
    admin = AdminClient(_client_config(bootstrap_servers, config))
    if _partitions(admin, topic, timeout_s) is not None:
        return False
    request = NewTopic(topic, num_partitions=partitions, config=dict(TOPIC_CONFIG))
    future = admin.create_topics([request], request_timeout=timeout_s)[topic]
    error = future.exception(timeout=timeout_s)
    if error is not None:
        if isinstance(error, KafkaException) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False  # created meanwhile by someone else
        raise WatchlistStoreError(f"could not create topic {topic!r}: {error}")
    deadline = time.monotonic() + timeout_s
    while _partitions(admin, topic, timeout_s) is None:
        if time.monotonic() > deadline:
            raise WatchlistStoreError(f"topic {topic!r} created but not visible after {timeout_s:.0f} s")
        time.sleep(0.1)
    return True


def read_watchlist(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> WatchlistSnapshot:
    """Every partition from its beginning to the end offset seen at the start; a missing topic is
    an empty watch list (`topic_exists` False)."""
    consumer = Consumer(
        {
            **_client_config(bootstrap_servers, config),
            "group.id": f"stream-worker-watchlist-{uuid.uuid4().hex}",  # never joined: assign only
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    try:
        return _read(consumer, topic, timeout_s)
    finally:
        consumer.close()


def _read(consumer: Consumer, topic: str, timeout_s: float) -> WatchlistSnapshot:
    partitions = _partitions(consumer, topic, timeout_s)
    if partitions is None:
        return WatchlistSnapshot(topic_exists=False)
    ends: dict[int, int] = {}
    assignment = []
    for partition in partitions:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        except KafkaException as error:
            raise WatchlistStoreError(f"cannot read the offsets of {topic}[{partition}]: {error}") from error
        if high > low:
            ends[partition] = high
            assignment.append(TopicPartition(topic, partition, low))
    snapshot = WatchlistSnapshot()
    if not ends:
        return snapshot
    consumer.assign(assignment)
    last: dict[int, int] = {}  # partition -> last offset applied
    deadline = time.monotonic() + timeout_s
    while ends:
        if time.monotonic() > deadline:
            missing = ", ".join(
                f"{topic}[{partition}] before {end}" for partition, end in sorted(ends.items())
            )
            raise WatchlistStoreError(f"watch list not read to its end within {timeout_s:.0f} s: {missing}")
        _apply(_consume(consumer, _POLL_WAIT_S), snapshot, last)
        for partition, end in list(ends.items()):
            if last.get(partition, -1) >= end - 1 or _position(consumer, topic, partition) >= end:
                del ends[partition]
    # The local broker reports a partition's end as its last batch's first offset + 1: the rest of
    # that batch comes with the same fetch. Apply what keeps arriving right away.
    while time.monotonic() < deadline and _apply(_consume(consumer, _DRAIN_WAIT_S), snapshot, last):
        pass
    return snapshot


def _consume(consumer: Consumer, wait_s: float) -> list[Message]:
    records = []
    for message in consumer.consume(_POLL_BATCH, wait_s):
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise WatchlistStoreError(f"reading the watch list failed: {error.str()}")
        # Other errors (a broker restarting, end of partition) are retried by librdkafka.
    return records


def _position(consumer: Consumer, topic: str, partition: int) -> int:
    (position,) = consumer.position([TopicPartition(topic, partition)])
    return position.offset


def _apply(messages: Iterable[Message], snapshot: WatchlistSnapshot, last: dict[int, int]) -> int:
    """Apply records to the snapshot; how many there were."""
    count = 0
    for message in messages:
        count += 1
        partition, offset = message.partition(), message.offset()
        if offset <= last.get(partition, -1):
            continue  # fetched again
        last[partition] = offset
        snapshot.records += 1
        try:
            plate, entry = decode_record(message.key(), message.value())
        except WatchRecordError as error:
            snapshot.skipped.append(SkippedRecord(partition, offset, str(error)))
            continue
        if entry is None:
            snapshot.entries.pop(plate, None)
        else:
            snapshot.entries[plate] = entry
    return count


def write_changes(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    entries: Sequence[WatchEntry] = (),
    removals: Sequence[str] = (),
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int:
    """Put `entries` on the watch list and take the plates `removals` off (tombstones), creating
    the compacted topic if needed; returns once every record is stored (how many), else raises
    WatchlistStoreError naming the records that failed."""
    records = [encode_entry(entry) for entry in entries] + [encode_removal(plate) for plate in removals]
    if not records:
        return 0
    ensure_topic(bootstrap_servers, topic, config, timeout_s=timeout_s)
    producer = Producer(
        {
            "partitioner": "murmur2_random",
            **_client_config(bootstrap_servers, config),
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": int(timeout_s * 1000),
        }
    )
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            key = (message.key() or b"").decode("utf-8", "replace")
            failures.append(f"{key}: {error.str()}")

    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: let deliveries drain it
            except KafkaException as error:
                raise WatchlistStoreError(f"cannot write to topic {topic!r}: {error}") from error
    remaining = producer.flush(timeout_s + 5)
    if failures or remaining:
        shown = "; ".join(failures[:10]) + (f"; and {len(failures) - 10} more" if len(failures) > 10 else "")
        if remaining:
            shown += f"{'; ' if shown else ''}{remaining} not acknowledged within {timeout_s:.0f} s"
        failed = len(failures) + remaining
        raise WatchlistStoreError(f"{failed} of {len(records)} watch-list record(s) not stored: {shown}")
    return len(records)
