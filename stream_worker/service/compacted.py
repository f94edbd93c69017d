"""Settings kept on compacted topics (watch list, cameras): key -> latest value, a tombstone deletes.

One reader for all of them, so that each service reads its settings the same way:

- `read_compacted` reads a topic whole: every partition assigned (no group, nothing committed)
  from its beginning up to the end offsets seen at the start, records applied in offset order.
- `CompactedFollower` does that once (`load`: "caught up to the end"), then follows the topic
  from the ends noted before the read, so records written during the read are applied again, in
  order, and leave the same values. `poll` never blocks longer than asked and applies changes as
  they come. A topic that does not exist yet is empty; it is looked for again every few seconds
  and read from its beginning once it appears (never created by reading).
- `FollowerThread` runs a follower on a thread of its own for a service whose main loop should
  not own it; readers get a consistent mapping without a lock (copy on write).
- `CompactedView` is the typed view a process starts once and answers from in memory: a
  `FollowerThread` over one topic that also writes to it and waits for its own records to come
  back (`write`: stored, then applied to the view), so what a writer reads next includes its write.
- `since_s` bounds a read to the records written in the last seconds (for a topic every value
  of which is renewed on a heartbeat, such as the cameras' status): the first offset is found by
  reading a few records' timestamps (brokers that ignore ListOffsets by time answer it too), so
  the read costs the same after an hour or a week of history.
- `ensure_compacted_topic` / `write_compacted` create the topic and write records with acks=all,
  waiting for each delivery, with Kafka's Java default partitioner so every client puts a key in
  the same partition (compaction and last-record-wins rely on it). `CompactedWriter` does the
  writing through one producer kept for a process's life (the console's views share one);
  `write_compacted` is a one-shot writer, for a command's single change.
- `CompactedTopic` declares a topic's record format once (CAMERAS, WATCHLIST, TARGETS...): its
  `read` and `write` are the two above with the declared decode and partitions.

Records a `decode` function refuses (ValueError) are skipped, counted and logged with their
partition and offset: one bad producer never hides the rest, and never stops the reader.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from stream_worker.service import kafka
from stream_worker.service.gaps import GapHealer

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")
# (key, value) of a record -> (key, value or None for a tombstone); ValueError: skip the record.
Decode = Callable[[bytes | None, bytes | None], tuple[K, V | None]]

DEFAULT_TIMEOUT_S = 30.0
# Settings change rarely: an empty fetch that waits longer costs the broker less. The local broker
# (Tansu), with three idle readers, spent 0.38 CPU s a minute at librdkafka's default 500 ms and 0.12
# at 2000 ms; it then answers a change ~0.6 s later (Kafka answers at once), still within seconds.
FOLLOW_FETCH_WAIT_MS = 2000
# A read to the end: the local broker (Tansu) lists a partition's batches on every fetch and gives
# up when that takes longer than the fetch's wait; at 20 ms a loaded host read nothing at all.
READ_FETCH_WAIT_MS = 500
TOPIC_CONFIG = {"cleanup.policy": "compact"}
# Settings are small and read whole; one partition keeps a key's records in one order.
DEFAULT_PARTITIONS = 1
LOOK_AGAIN_S = 5.0  # how often a missing topic is looked for
POLL_BATCH = 500
_READ_BATCH = 1000
# A windowed read (`since_s`) of a partition holding no more records than this reads it whole and
# keeps the window's: the local broker answers about ten records a fetch, a probe costs a fetch.
SCAN_WHOLE_BELOW = 32
_POLL_WAIT_S = 0.2
_DRAIN_WAIT_S = 0.05
# consume() returns when its batch is full or its wait is over: reading to known ends, a short wait
# hands over each fetch as it comes instead of sitting out 0.2 s after every one.
_READ_WAIT_S = 0.02


class CompactedTopicError(RuntimeError):
    """The broker could not be reached, refused a request, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    partition: int
    offset: int
    reason: str

    def __str__(self) -> str:
        return f"partition {self.partition} offset {self.offset}: {self.reason}"


@dataclass(slots=True)
class CompactedSnapshot(Generic[K, V]):
    """A topic as read: latest value by key, the records skipped, whether the topic exists, and
    per partition the offset after the last record read (`ends`: where following it goes on)."""

    values: dict[K, V] = field(default_factory=dict)
    skipped: list[SkippedRecord] = field(default_factory=list)
    records: int = 0
    topic_exists: bool = True
    ends: dict[int, int] = field(default_factory=dict)


def client_config(bootstrap_servers: str, config: Mapping[str, object] | None) -> dict[str, object]:
    return {**(config or {}), "bootstrap.servers": bootstrap_servers}


def side_consumer(bootstrap_servers: str, config: Mapping[str, object] | None, purpose: str) -> Consumer:
    """A consumer that only assigns: its group id is unique and never joined, nothing committed."""
    return Consumer(
        {
            **client_config(bootstrap_servers, config),
            "group.id": f"stream-worker-{purpose}-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )


def topic_partitions(
    client: Consumer | Producer | AdminClient, topic: str, timeout_s: float
) -> list[int] | None:
    """The topic's partition ids, or None when the broker does not know the topic."""
    try:
        # All topics, not this one by name: asking for a missing topic by name makes a broker with
        # auto.create.topics.enable create it, uncompacted.
        metadata = client.list_topics(timeout=timeout_s).topics.get(topic)
    except KafkaException as error:
        raise CompactedTopicError(f"cannot read the metadata of topic {topic!r}: {error}") from error
    if metadata is None or metadata.error is not None or not metadata.partitions:
        if metadata is not None and metadata.error is not None:
            code = metadata.error.code()
            if code not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise CompactedTopicError(f"topic {topic!r}: {metadata.error.str()}")
        return None
    return sorted(metadata.partitions)


def end_offsets(consumer: Consumer, topic: str, timeout_s: float) -> dict[int, int] | None:
    """Each partition's high watermark; None when the topic does not exist."""
    partitions = topic_partitions(consumer, topic, timeout_s)
    if partitions is None:
        return None
    try:
        return {
            partition: consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)[1]
            for partition in partitions
        }
    except KafkaException as error:
        raise CompactedTopicError(f"cannot read the offsets of topic {topic!r}: {error}") from error


def ensure_compacted_topic(
    bootstrap_servers: str,
    topic: str,
    config: Mapping[str, object] | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> bool:
    """Create the compacted topic unless it exists; True when this call created it. An existing
    topic is left as it is."""
    admin = AdminClient(client_config(bootstrap_servers, config))
    if topic_partitions(admin, topic, timeout_s) is not None:
        return False
    request = NewTopic(topic, num_partitions=partitions, config=dict(TOPIC_CONFIG))
    future = admin.create_topics([request], request_timeout=timeout_s)[topic]
    error = future.exception(timeout=timeout_s)
    if error is not None:
        if isinstance(error, KafkaException) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False  # created meanwhile by someone else
        raise CompactedTopicError(f"could not create topic {topic!r}: {error}")
    deadline = time.monotonic() + timeout_s
    while topic_partitions(admin, topic, timeout_s) is None:
        if time.monotonic() > deadline:
            raise CompactedTopicError(f"topic {topic!r} created but not visible after {timeout_s:.0f} s")
        time.sleep(0.1)
    return True


def read_compacted(
    bootstrap_servers: str,
    topic: str,
    decode: Decode[K, V],
    config: Mapping[str, object] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    since_s: float | None = None,
) -> CompactedSnapshot[K, V]:
    """Every partition from its beginning (with `since_s`: from its first record written in the
    last `since_s` seconds) to the end offset seen at the start; a missing topic is empty
    (`topic_exists` False). CompactedTopicError when not read to the end in time."""
    reading = {"fetch.wait.max.ms": READ_FETCH_WAIT_MS, **(config or {})}
    consumer = side_consumer(bootstrap_servers, reading, "compacted-read")
    try:
        return _read(
            consumer,
            topic,
            decode,
            timeout_s,
            since_s,
            probe=lambda: side_consumer(bootstrap_servers, reading, "compacted-probe"),
        )
    finally:
        consumer.close()


def _read(
    consumer: Consumer,
    topic: str,
    decode: Decode[K, V],
    timeout_s: float,
    since_s: float | None = None,
    probe: Callable[[], Consumer] | None = None,
) -> CompactedSnapshot[K, V]:
    cutoff_ms = None if since_s is None else int((time.time() - since_s) * 1000)
    partitions = topic_partitions(consumer, topic, timeout_s)
    snapshot: CompactedSnapshot[K, V] = CompactedSnapshot()
    if partitions is None:
        snapshot.topic_exists = False
        return snapshot
    ends: dict[int, int] = {}
    assignment = []

    def watermarks(partition: int) -> tuple[int, int]:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
        except KafkaException as error:
            raise CompactedTopicError(f"cannot read the offsets of {topic}[{partition}]: {error}") from error

    # One round trip each, waiting on the broker: asked side by side.
    with ThreadPoolExecutor(max_workers=max(1, len(partitions))) as pool:
        spans = dict(zip(partitions, pool.map(watermarks, partitions), strict=True))
    starts = {partition: low for partition, (low, _high) in spans.items()}
    if cutoff_ms is not None and probe is not None:
        long = [partition for partition, (low, high) in spans.items() if high - low > SCAN_WHOLE_BELOW]
        # Each partition's probes wait on the broker, not the CPU: searched side by side.
        with ThreadPoolExecutor(max_workers=max(1, len(long))) as pool:
            found = pool.map(
                lambda partition: first_offset_since(
                    probe, topic, partition, spans[partition], cutoff_ms, timeout_s
                ),
                long,
            )
            starts.update(zip(long, found, strict=True))
    for partition, (low, high) in spans.items():
        start = starts[partition]
        if high > start:
            ends[partition] = high
        if high > low:  # from `high` on: only what the local broker's short end hides (below)
            assignment.append(TopicPartition(topic, partition, start))
    snapshot.ends = {partition: high for partition, (_low, high) in spans.items()}
    if not assignment:
        return snapshot
    consumer.assign(assignment)
    last: dict[int, int] = {}  # partition -> last offset applied
    deadline = time.monotonic() + timeout_s
    while ends:
        if time.monotonic() > deadline:
            missing = ", ".join(
                f"{topic}[{partition}] before {end}" for partition, end in sorted(ends.items())
            )
            raise CompactedTopicError(
                f"topic {topic!r} not read to its end within {timeout_s:.0f} s: {missing}"
            )
        _apply(_consume(consumer, topic, _READ_WAIT_S), snapshot, last, decode, cutoff_ms)
        for partition, end in list(ends.items()):
            if last.get(partition, -1) >= end - 1 or _position(consumer, topic, partition) >= end:
                del ends[partition]
    # The local broker reports a partition's end as its last batch's first offset + 1: the rest of
    # that batch comes with the same fetch. Apply what keeps arriving right away (a partition whose
    # records all looked older than the window gets a fetch's time to show the rest).
    wait_s = _POLL_WAIT_S if len(assignment) > len(last) else _DRAIN_WAIT_S
    while time.monotonic() < deadline and _apply(
        _consume(consumer, topic, wait_s), snapshot, last, decode, cutoff_ms
    ):
        wait_s = _DRAIN_WAIT_S
    for partition, offset in last.items():
        snapshot.ends[partition] = max(snapshot.ends[partition], offset + 1)
    return snapshot


def first_offset_since(
    probe: Callable[[], Consumer],
    topic: str,
    partition: int,
    span: tuple[int, int],
    cutoff_ms: int,
    timeout_s: float,
) -> int:
    """An offset in [low, high) = `span` at or before the first record whose timestamp is
    `cutoff_ms` or later (high: none is); the caller drops what it reads before the cutoff.
    Timestamps are taken to grow with offsets (one clock writes them, or clocks close enough for a
    window of seconds). It gallops back from the end, 16 records, then four times as many each
    step, and stops at the first record older than the cutoff: a few single reads, however long
    the history before it, and at most four windows' worth read. No finer search: the local broker
    answers about ten records a fetch, so reading a few more costs less than another probe. Each
    probe is a new consumer from `probe`: one that moves to another offset waits for its fetch still
    at the old one."""
    low, high = span
    newest = high  # every record from here on is known to be new enough
    step = 16
    while newest > low:
        at = max(low, newest - step)
        _, stamp = _stamp_at(probe, topic, partition, at, timeout_s)
        if stamp < cutoff_ms:
            return at
        newest = at
        step *= 4
    return low


def _stamp_at(
    probe: Callable[[], Consumer], topic: str, partition: int, offset: int, timeout_s: float
) -> tuple[int, int]:
    """(offset, timestamp in ms) of the first record at `offset` or after; a record without a
    timestamp counts as new (read, not skipped)."""
    consumer = probe()
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for message in _consume(consumer, topic, _READ_WAIT_S, batch=1):
                if message.partition() == partition and message.offset() >= offset:
                    _, stamp = message.timestamp()
                    return message.offset(), (stamp if stamp >= 0 else 2**62)
    finally:
        consumer.close()
    raise CompactedTopicError(f"cannot read {topic}[{partition}] at offset {offset} within {timeout_s:.0f} s")


def _consume(consumer: Consumer, topic: str, wait_s: float, batch: int = _READ_BATCH) -> list[Message]:
    records = []
    for message in consumer.consume(batch, wait_s):
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise CompactedTopicError(f"reading topic {topic!r} failed: {error.str()}")
        # Other errors (a broker restarting, end of partition) are retried by librdkafka.
    return records


def _position(consumer: Consumer, topic: str, partition: int) -> int:
    (position,) = consumer.position([TopicPartition(topic, partition)])
    return position.offset


def _apply(
    messages: Iterable[Message],
    snapshot: CompactedSnapshot[K, V],
    last: dict[int, int],
    decode: Decode[K, V],
    cutoff_ms: int | None = None,
) -> int:
    """Apply records (those written at `cutoff_ms` or later) to the snapshot; how many came."""
    count = 0
    for message in messages:
        count += 1
        partition, offset = message.partition(), message.offset()
        if offset <= last.get(partition, -1):
            continue  # fetched again
        last[partition] = offset
        if cutoff_ms is not None and 0 <= message.timestamp()[1] < cutoff_ms:
            continue  # older than the window: fetched with a batch that ends inside it
        snapshot.records += 1
        try:
            key, value = decode(message.key(), message.value())
        except ValueError as error:
            snapshot.skipped.append(SkippedRecord(partition, offset, str(error)))
            continue
        if value is None:
            snapshot.values.pop(key, None)
        else:
            snapshot.values[key] = value
    return count


@dataclass(frozen=True, slots=True)
class Written:
    """Records stored: how many, and per partition the offset just after the last one stored."""

    count: int
    ends: dict[int, int]


class _Delivery:
    """One write's delivery reports, counted whichever thread serves them."""

    def __init__(self, count: int) -> None:
        self.pending = count
        self.failures: list[str] = []
        self.ends: dict[int, int] = {}
        self._done = threading.Condition()

    def delivered(self, error: KafkaError | None, message: Message) -> None:
        with self._done:
            self.pending -= 1
            if error is not None:
                key = (message.key() or b"").decode("utf-8", "replace")
                self.failures.append(f"{key}: {error.str()}")
            else:
                partition, offset = message.partition(), message.offset()
                if offset is not None and offset >= 0:
                    self.ends[partition] = max(self.ends.get(partition, 0), offset + 1)
            self._done.notify_all()

    def fault(self, topic: str, count: int, timeout_s: float) -> str:
        """What went wrong, for the error: the first ten failures and how many were not answered."""
        failures = self.failures
        shown = "; ".join(failures[:10]) + (f"; and {len(failures) - 10} more" if len(failures) > 10 else "")
        if self.pending > 0:
            shown += f"{'; ' if shown else ''}{self.pending} not acknowledged within {timeout_s:.0f} s"
        failed = len(failures) + max(0, self.pending)
        return f"{failed} of {count} record(s) not stored in {topic!r}: {shown}"

    def wait(self, timeout_s: float) -> None:
        with self._done:
            self._done.wait_for(lambda: self.pending <= 0, max(0.0, timeout_s))


class CompactedWriter:
    """A process's writes to compacted topics through one producer, made at the first write and
    kept: a producer costs a connection and an idempotence handshake (about half a second against
    the local broker), which a console paid on every change. Topics seen to exist are not looked
    up again. Safe from any thread; `close` waits for what is still being sent. A write that fails
    drops the producer (an idempotent producer's fatal error leaves it unusable): the next write
    makes a new one and looks for its topic again."""

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, object] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._config = dict(config or {})
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._producer: Producer | None = None
        self._known: set[str] = set()

    def _ready(self, topic: str, partitions: int) -> Producer:
        with self._lock:
            if self._producer is None:
                self._producer = Producer(
                    {
                        "partitioner": "murmur2_random",
                        **client_config(self._bootstrap, self._config),
                        "enable.idempotence": True,
                        "acks": "all",
                        "message.timeout.ms": int(self._timeout_s * 1000),
                    }
                )
            producer = self._producer
            if topic not in self._known:
                if topic_partitions(producer, topic, self._timeout_s) is None:
                    ensure_compacted_topic(
                        self._bootstrap, topic, self._config, partitions, timeout_s=self._timeout_s
                    )
                self._known.add(topic)
            return producer

    def write(
        self,
        topic: str,
        records: Sequence[tuple[bytes, bytes | None]],
        partitions: int = DEFAULT_PARTITIONS,
    ) -> Written:
        """Write (key, value) records (None: tombstone), creating the compacted topic if needed
        (with `partitions`); returns once every record is stored (how many, and where: what a view
        waits for), else raises CompactedTopicError naming the records that failed."""
        if not records:
            return Written(0, {})
        producer = self._ready(topic, partitions)
        delivery = _Delivery(len(records))
        for key, value in records:
            while True:
                try:
                    producer.produce(topic, key=key, value=value, on_delivery=delivery.delivered)
                    break
                except BufferError:
                    producer.poll(0.1)  # the local queue is full: let deliveries drain it
                except KafkaException as error:
                    self._drop(producer, topic)
                    raise CompactedTopicError(f"cannot write to topic {topic!r}: {error}") from error
        deadline = time.monotonic() + self._timeout_s + 5
        producer.flush(self._timeout_s + 5)
        # Another thread's flush may be serving this write's last report as this one returns.
        delivery.wait(deadline - time.monotonic())
        if delivery.failures or delivery.pending > 0:
            self._drop(producer, topic)
            raise CompactedTopicError(delivery.fault(topic, len(records), self._timeout_s))
        return Written(len(records), delivery.ends)

    def _drop(self, producer: Producer, topic: str) -> None:
        with self._lock:
            self._known.discard(topic)
            if self._producer is producer:
                self._producer = None

    def close(self, timeout_s: float = 5.0) -> None:
        """Wait up to `timeout_s` for records still being sent, then let the producer go."""
        with self._lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(timeout_s)


def write_compacted(
    bootstrap_servers: str,
    topic: str,
    records: Sequence[tuple[bytes, bytes | None]],
    config: Mapping[str, object] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    partitions: int = DEFAULT_PARTITIONS,
) -> Written:
    """One write through a writer of its own (a command's single change): see `CompactedWriter`."""
    writer = CompactedWriter(bootstrap_servers, config, timeout_s)
    try:
        return writer.write(topic, records, partitions)
    finally:
        writer.close()


class CompactedFollower(Generic[K, V]):
    """A compacted topic read whole (`load`), then followed (`poll`), on the caller's thread.

    `values` is replaced, never changed in place, so a reference taken by another thread stays
    consistent. `name` only words the log lines ("watch list", "camera settings").
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        decode: Decode[K, V],
        config: Mapping[str, object] | None = None,
        on_skipped: Callable[[], None] = lambda: None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        name: str = "compacted topic",
        look_again_s: float = LOOK_AGAIN_S,
        since_s: float | None = None,
        fetch_wait_ms: int = FOLLOW_FETCH_WAIT_MS,
    ) -> None:
        self.topic = topic
        self.name = name
        self.values: Mapping[K, V] = {}
        # partition -> the offset after the last record applied (a writer waits for its own)
        self.applied: Mapping[int, int] = {}
        self.loaded = False  # read to the end noted at the start of `load`
        self.changes = 0  # records applied after the load
        self.skipped = 0  # records `decode` refused, during the load and after
        self._decode = decode
        self._bootstrap = bootstrap_servers
        self._config = dict(config or {})
        self._on_skipped = on_skipped
        self._timeout_s = timeout_s
        self._look_again_s = look_again_s
        self._since_s = since_s
        self._gaps = GapHealer()
        self._assigned = False
        self._looked_at = 0.0
        follow = {"fetch.wait.max.ms": fetch_wait_ms, **self._config}
        self._consumer = side_consumer(bootstrap_servers, follow, "compacted-follow")

    def load(self) -> None:
        """Read the whole topic; CompactedTopicError when the broker does not answer in time."""
        ends = end_offsets(self._consumer, self.topic, self._timeout_s)
        snapshot = read_compacted(
            self._bootstrap, self.topic, self._decode, self._config, self._timeout_s, self._since_s
        )
        for skipped in snapshot.skipped:
            self._skip(str(skipped))
        self.values = dict(snapshot.values)
        if ends is None and snapshot.topic_exists:
            # Created between the two looks: follow from where the read began, not from the
            # beginning (which would apply, and count as skipped, its records a second time).
            ends = snapshot.ends
        if ends is not None:
            self._assign(ends)
            self.applied = dict(ends)
        self._looked_at = time.monotonic()
        self.loaded = True
        log.info(
            f"{self.name} loaded",
            extra={
                "topic": self.topic,
                "keys": len(self.values),
                "skipped": len(snapshot.skipped),
                "topic_exists": ends is not None,
            },
        )

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

    def look_now(self) -> None:
        """Look for a missing topic at the next `poll` (a writer has just created it)."""
        self._looked_at = float("-inf")

    def poll(self, timeout_s: float = 0) -> set[K]:
        """Apply what was written since, waiting at most `timeout_s` for it; the keys whose value
        changed (empty: nothing changed). A broker that does not answer is retried next time."""
        if not self._assigned:
            if time.monotonic() - self._looked_at < self._look_again_s:
                if timeout_s > 0:
                    time.sleep(timeout_s)
                return set()
            self._looked_at = time.monotonic()
            try:
                ends = end_offsets(self._consumer, self.topic, self._timeout_s)
            except CompactedTopicError as error:
                log.warning(f"cannot look for the {self.name} topic", extra={"error": str(error)})
                return set()
            if ends is None:
                return set()
            self._assign(dict.fromkeys(ends))
            log.info(f"{self.name} topic appeared: following it", extra={"topic": self.topic})
        changed: set[K] = set()
        values: dict[K, V] | None = None  # the copy being changed, when something changes
        # A batch consume sits out its whole wait unless the batch fills: wait for one record,
        # then take what else has come, so a change is applied as soon as it is fetched.
        messages = kafka.consume_records(self._consumer, 1, timeout_s, self._gaps)
        if messages:
            messages += kafka.consume_records(self._consumer, POLL_BATCH - 1, 0, self._gaps)
        if messages:
            applied = dict(self.applied)
            for message in messages:
                applied[message.partition()] = max(applied.get(message.partition(), 0), message.offset() + 1)
            self.applied = applied
        for message in messages:
            self.changes += 1
            try:
                key, value = self._decode(message.key(), message.value())
            except ValueError as error:
                self._skip(f"partition {message.partition()} offset {message.offset()}: {error}")
                continue
            current = self.values if values is None else values
            if value is None and key not in current:
                continue
            if value is not None and current.get(key) == value:
                continue
            if values is None:
                values = dict(self.values)
            if value is None:
                del values[key]
            else:
                values[key] = value
            changed.add(key)
        if values is not None:
            self.values = values
        if changed:
            log.info(f"{self.name} changed", extra={"topic": self.topic, "keys": len(self.values)})
        return changed

    def _skip(self, where: str) -> None:
        self.skipped += 1
        self._on_skipped()
        log.warning(f"skipped a {self.name} record", extra={"topic": self.topic, "record": where})

    def close(self) -> None:
        self._consumer.close()


class FollowerThread(Generic[K, V]):
    """A `CompactedFollower` run on a daemon thread: loads (retrying until the broker answers),
    then polls. `values`/`get` are safe from any thread; `wait_until_caught_up` says when the
    topic has been read to its end once. An error never ends the thread: the follower is made
    again and reloaded, the last values staying in place meanwhile."""

    def __init__(
        self,
        make: Callable[[], CompactedFollower[K, V]],
        poll_s: float = 0.5,
        retry_s: float = 2.0,
        on_change: Callable[[set[K]], None] = lambda keys: None,
        name: str = "compacted-follower",
    ) -> None:
        self._make = make
        self._poll_s = poll_s
        self._retry_s = retry_s
        self._on_change = on_change
        self._values: Mapping[K, V] = {}
        self._applied: Mapping[int, int] = {}
        self._progress = threading.Condition()
        self._hurry = threading.Event()  # a writer waits: look for a missing topic now
        self._caught_up = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.errors = 0

    def start(self) -> FollowerThread[K, V]:
        self._thread.start()
        return self

    @property
    def values(self) -> Mapping[K, V]:
        """The latest values by key; never changed after it is returned."""
        return self._values

    def get(self, key: K) -> V | None:
        return self._values.get(key)

    @property
    def caught_up(self) -> bool:
        return self._caught_up.is_set()

    def wait_until_caught_up(self, timeout_s: float | None = None) -> bool:
        """True once the topic has been read to its end (at least once); False on timeout."""
        return self._caught_up.wait(timeout_s)

    def wait_applied(self, ends: Mapping[int, int], timeout_s: float) -> bool:
        """True once every record before `ends` (partition -> offset, as `Written.ends`) has been
        applied to `values`; False on timeout."""
        self._hurry.set()

        def reached() -> bool:
            return all(self._applied.get(partition, 0) >= end for partition, end in ends.items())

        with self._progress:
            return self._progress.wait_for(reached, timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        follower: CompactedFollower[K, V] | None = None
        while not self._stop.is_set():
            try:
                if follower is None:
                    follower = self._make()
                if not follower.loaded:
                    follower.load()
                    self._publish(
                        follower, set(self._values) ^ set(follower.values) | self._differing(follower)
                    )
                    self._caught_up.set()
                    continue
                if self._hurry.is_set():
                    self._hurry.clear()
                    follower.look_now()
                changed = follower.poll(self._poll_s)
                self._publish(follower, changed)
            except Exception:  # a broker away, a fatal consumer error: start again, never die
                self.errors += 1
                log.exception("following a compacted topic failed; starting again")
                if follower is not None:
                    self._close(follower)
                    follower = None
                self._stop.wait(self._retry_s)
        if follower is not None:
            self._close(follower)

    def _differing(self, follower: CompactedFollower[K, V]) -> set[K]:
        return {key for key, value in follower.values.items() if self._values.get(key, value) != value}

    def _publish(self, follower: CompactedFollower[K, V], changed: set[K]) -> None:
        self._values = follower.values
        if follower.applied is not self._applied:
            with self._progress:
                self._applied = follower.applied
                self._progress.notify_all()
        if changed:
            try:
                self._on_change(changed)
            except Exception:
                log.exception("a compacted-topic change callback failed")

    @staticmethod
    def _close(follower: CompactedFollower[K, V]) -> None:
        try:
            follower.close()
        except Exception:
            log.exception("closing a compacted-topic follower failed")


class CompactedView(FollowerThread[K, V]):
    """One compacted topic as a process sees it: started once, followed live in memory (key ->
    latest decoded value), written through `write`, which returns once the records are stored and
    applied here. `read` answers from memory; before the first load it waits for it.

    `writer` is the process's `CompactedWriter` (shared by its views; without one the view has
    its own, closed with it; a producer is made at the first write). A view written to while someone
    waits for the echo may take a shorter `fetch_wait_ms`: the local broker answers a change only
    when the follower's fetch wait is over."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        decode: Decode[K, V],
        config: Mapping[str, object] | None = None,
        name: str = "compacted topic",
        on_skipped: Callable[[], None] = lambda: None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        partitions: int = DEFAULT_PARTITIONS,
        since_s: float | None = None,
        poll_s: float = 0.5,
        writer: CompactedWriter | None = None,
        fetch_wait_ms: int = FOLLOW_FETCH_WAIT_MS,
    ) -> None:
        self.topic = topic
        self.name = name
        self._config = dict(config or {})
        self._timeout_s = timeout_s
        self._partitions = partitions
        self._owns_writer = writer is None
        self._writer = writer or CompactedWriter(bootstrap_servers, self._config, timeout_s)
        super().__init__(
            lambda: CompactedFollower(
                bootstrap_servers,
                topic,
                decode,
                self._config,
                on_skipped,
                timeout_s,
                name,
                since_s=since_s,
                fetch_wait_ms=fetch_wait_ms,
            ),
            poll_s=poll_s,
            name=f"view-{topic}",
        )

    def read(self, timeout_s: float | None = None) -> Mapping[K, V]:
        """The values by key; CompactedTopicError when the topic was never read to its end
        within `timeout_s` (default: the view's timeout) of asking."""
        if not self.wait_until_caught_up(self._timeout_s if timeout_s is None else timeout_s):
            raise CompactedTopicError(f"the {self.name} (topic {self.topic!r}) has not been read yet")
        return self.values

    def write(self, records: Sequence[tuple[bytes, bytes | None]], timeout_s: float | None = None) -> None:
        """Store (key, value) records (None: tombstone) and wait until this view has applied them;
        CompactedTopicError when they are not stored, or not read back, within the timeout."""
        timeout = self._timeout_s if timeout_s is None else timeout_s
        written = self._writer.write(self.topic, records, self._partitions)
        if not self.wait_applied(written.ends, timeout):
            raise CompactedTopicError(
                f"{written.count} record(s) stored in topic {self.topic!r} but not read back within "
                f"{timeout:.0f} s: the {self.name} shown may not include them yet"
            )

    def close(self, timeout_s: float = 10.0) -> None:
        super().close(timeout_s)
        if self._owns_writer:
            self._writer.close()


@dataclass(frozen=True, slots=True)
class CompactedTopic(Generic[K, V]):
    """One compacted topic's record format, declared once: its usual name, how its records decode
    and how many partitions a topic created by writing it gets. The commands read and write their
    topics through it; `topic` on each call overrides the name (a deployment's prefix, a test's
    own topic)."""

    topic: str
    decode: Decode[K, V]
    partitions: int = DEFAULT_PARTITIONS

    def read(
        self,
        bootstrap_servers: str,
        topic: str | None = None,
        config: Mapping[str, object] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        since_s: float | None = None,
    ) -> CompactedSnapshot[K, V]:
        """`read_compacted`: the topic whole (or its last `since_s` seconds), a missing one empty."""
        return read_compacted(bootstrap_servers, topic or self.topic, self.decode, config, timeout_s, since_s)

    def write(
        self,
        bootstrap_servers: str,
        records: Sequence[tuple[bytes, bytes | None]],
        topic: str | None = None,
        config: Mapping[str, object] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> Written:
        """`write_compacted`, creating the topic with this declaration's partitions."""
        return write_compacted(
            bootstrap_servers, topic or self.topic, records, config, timeout_s, self.partitions
        )
