"""The shared reader of compacted settings topics (service/compacted.py): read whole, followed
live, tombstones, records it cannot decode skipped and counted, a missing topic, a failing broker.

Integration tests use the real local broker; `FollowerThread`'s recovery is tested with a
stand-in follower (the thread's own logic, not Kafka's)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from support import count_kafka_clients

from stream_worker.service import compacted
from stream_worker.service.compacted import (
    READ_FETCH_WAIT_MS,
    CompactedFollower,
    CompactedTopicError,
    CompactedView,
    CompactedWriter,
    FollowerThread,
    SkippedRecord,
    ensure_compacted_topic,
    first_offset_since,
    read_compacted,
    side_consumer,
    topic_partitions,
    write_compacted,
)

CLOSED = "127.0.0.1:9"  # nothing listens there
WAIT_S = 15.0


def decode(key: bytes | None, value: bytes | None) -> tuple[str, str | None]:
    """Keys must be present; values must be lowercase ASCII text (anything else is refused)."""
    if key is None:
        raise ValueError("no key")
    if value is None:
        return key.decode(), None
    text = value.decode()
    if not text.islower():
        raise ValueError(f"value {text!r} is not lowercase")
    return key.decode(), text


def records(**values: str | None) -> list[tuple[bytes, bytes | None]]:
    return [(key.encode(), None if value is None else value.encode()) for key, value in values.items()]


def wait_for(condition: Callable[[], object], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def poll_until(follower: CompactedFollower, key_set: set[str]) -> set[str]:
    """Poll until the keys in `key_set` have all been reported changed; all the keys reported."""
    seen: set[str] = set()
    deadline = time.monotonic() + WAIT_S
    while not key_set <= seen:
        assert time.monotonic() < deadline, f"changes seen: {seen}, waited for {key_set}"
        seen |= follower.poll(0.2)
    return seen


# --- reading whole ---------------------------------------------------------------------------


@pytest.mark.integration
def test_write_creates_a_compacted_topic_once(kafka_bootstrap: str, unique_name: str) -> None:
    assert ensure_compacted_topic(kafka_bootstrap, unique_name) is True
    assert ensure_compacted_topic(kafka_bootstrap, unique_name) is False
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, unique_name)
    assert (
        admin.describe_configs([resource])[resource].result(timeout=30)["cleanup.policy"].value == "compact"
    )
    assert topic_partitions(admin, unique_name, 10) == [0]


@pytest.mark.integration
def test_a_missing_topic_is_empty_and_is_not_created(kafka_bootstrap: str, unique_name: str) -> None:
    snapshot = read_compacted(kafka_bootstrap, unique_name, decode)
    assert (snapshot.topic_exists, snapshot.values, snapshot.records, snapshot.skipped) == (False, {}, 0, [])
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert topic_partitions(admin, unique_name, 10) is None


@pytest.mark.integration
def test_latest_value_wins_tombstones_delete_bad_records_are_skipped(kafka_bootstrap: str, unique_name: str):
    assert write_compacted(kafka_bootstrap, unique_name, records(a="one", b="two", c="three")).count == 3
    write_compacted(kafka_bootstrap, unique_name, records(a="uno", b=None))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(unique_name, key=b"c", value=b"LOUD")  # refused by decode: c keeps "three"
    producer.produce(unique_name, key=None, value=b"x")
    assert producer.flush(30) == 0
    snapshot = read_compacted(kafka_bootstrap, unique_name, decode)
    assert snapshot.values == {"a": "uno", "c": "three"}
    assert (snapshot.records, snapshot.topic_exists) == (7, True)
    assert snapshot.skipped == [
        SkippedRecord(0, 5, "value 'LOUD' is not lowercase"),
        SkippedRecord(0, 6, "no key"),
    ]
    assert str(snapshot.skipped[1]) == "partition 0 offset 6: no key"


@pytest.mark.integration
def test_many_records_on_several_partitions_are_read_to_the_last(kafka_bootstrap: str, unique_name: str):
    ensure_compacted_topic(kafka_bootstrap, unique_name, partitions=3)
    many = {f"key-{k}": f"value-{k}" for k in range(1500)}
    assert write_compacted(kafka_bootstrap, unique_name, records(**many)).count == 1500
    assert read_compacted(kafka_bootstrap, unique_name, decode).values == many


def test_nothing_to_write_needs_no_broker() -> None:
    assert write_compacted(CLOSED, "settings", []).count == 0


def test_an_unreachable_broker_is_an_error_not_a_hang() -> None:
    started = time.monotonic()
    with pytest.raises(CompactedTopicError):
        read_compacted(CLOSED, "settings", decode, timeout_s=1)
    with pytest.raises(CompactedTopicError):
        write_compacted(CLOSED, "settings", records(a="x"), timeout_s=1)
    with pytest.raises(CompactedTopicError):
        CompactedFollower(CLOSED, "settings", decode, timeout_s=1).load()
    assert time.monotonic() - started < 30


# --- following -------------------------------------------------------------------------------


@pytest.mark.integration
def test_the_follower_loads_then_applies_changes(kafka_bootstrap: str, unique_name: str) -> None:
    write_compacted(kafka_bootstrap, unique_name, records(a="one", b="two"))
    skipped: list[int] = []
    follower = CompactedFollower(kafka_bootstrap, unique_name, decode, on_skipped=lambda: skipped.append(1))
    try:
        assert not follower.loaded
        follower.load()
        assert follower.loaded and follower.values == {"a": "one", "b": "two"}
        before = follower.values

        write_compacted(kafka_bootstrap, unique_name, records(a="uno", b=None, c="three"))
        assert poll_until(follower, {"a", "b", "c"}) == {"a", "b", "c"}
        assert follower.values == {"a": "uno", "c": "three"}
        assert before == {"a": "one", "b": "two"}, "a mapping handed out is never changed"
        # At least the three records; the local broker may hand the last loaded one over again.
        assert follower.changes >= 3
        applied = follower.changes

        # The same value again, a tombstone of a missing key, a bad record: no change reported.
        write_compacted(kafka_bootstrap, unique_name, records(a="uno", b=None))
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(unique_name, key=b"c", value=b"BAD")
        assert producer.flush(30) == 0
        reported: set[str] = set()
        deadline = time.monotonic() + WAIT_S
        while follower.changes < applied + 3:
            assert time.monotonic() < deadline, f"{follower.changes - applied} records applied"
            reported |= follower.poll(0.2)
        assert reported == set()
        assert follower.values == {"a": "uno", "c": "three"}
        assert follower.skipped == 1 and skipped == [1]
    finally:
        follower.close()


@pytest.mark.integration
def test_records_written_during_the_load_are_not_lost(kafka_bootstrap: str, unique_name: str) -> None:
    """The follower follows from the ends noted before the read: a record written after the read
    started is applied by the first polls, whether or not the read saw it."""
    write_compacted(kafka_bootstrap, unique_name, records(a="one"))
    follower = CompactedFollower(kafka_bootstrap, unique_name, decode)
    try:
        writer = threading.Thread(
            target=write_compacted, args=(kafka_bootstrap, unique_name, records(b="two", a="uno"))
        )
        writer.start()
        follower.load()
        writer.join()
        wait_for(lambda: follower.poll(0.2) is not None and follower.values == {"a": "uno", "b": "two"}, "b")
    finally:
        follower.close()


@pytest.mark.integration
def test_a_topic_that_appears_later_is_read_from_its_beginning(
    kafka_bootstrap: str, unique_name: str
) -> None:
    follower = CompactedFollower(kafka_bootstrap, unique_name, decode, look_again_s=0.2)
    try:
        follower.load()
        assert follower.loaded and follower.values == {}
        assert follower.poll() == set()
        write_compacted(kafka_bootstrap, unique_name, records(a="one", b="two"))
        poll_until(follower, {"a", "b"})
        assert follower.values == {"a": "one", "b": "two"}
    finally:
        follower.close()


@pytest.mark.integration
def test_a_topic_created_while_the_follower_loads_is_applied_once(
    kafka_bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Missing at the first look, written before the read: followed from where the read began,
    so a bad record is skipped (and counted) once, not again from the beginning."""
    write_compacted(kafka_bootstrap, unique_name, records(a="one", b="BAD"))
    real, looks = compacted.end_offsets, []

    def first_look_misses(*args: object) -> dict[int, int] | None:
        looks.append(1)
        return None if len(looks) == 1 else real(*args)

    monkeypatch.setattr(compacted, "end_offsets", first_look_misses)
    skipped: list[int] = []
    follower = CompactedFollower(
        kafka_bootstrap, unique_name, decode, on_skipped=lambda: skipped.append(1), look_again_s=0
    )
    try:
        follower.load()
        assert follower.values == {"a": "one"} and skipped == [1]
        write_compacted(kafka_bootstrap, unique_name, records(c="three"))
        poll_until(follower, {"c"})
        assert follower.values == {"a": "one", "c": "three"} and skipped == [1]
    finally:
        follower.close()


@pytest.mark.integration
def test_the_thread_is_caught_up_after_the_load_and_follows_live(kafka_bootstrap: str, unique_name: str):
    write_compacted(kafka_bootstrap, unique_name, records(a="one"))
    changes: list[set[str]] = []
    thread = FollowerThread(
        lambda: CompactedFollower(kafka_bootstrap, unique_name, decode), poll_s=0.1, on_change=changes.append
    )
    assert not thread.caught_up and thread.values == {}
    thread.start()
    try:
        assert thread.wait_until_caught_up(WAIT_S)
        assert thread.values == {"a": "one"} and thread.get("a") == "one"
        assert changes == [{"a"}]
        write_compacted(kafka_bootstrap, unique_name, records(a=None, b="two"))
        wait_for(lambda: thread.values == {"b": "two"}, "the change")
        assert thread.get("a") is None
        assert set().union(*changes[1:]) == {"a", "b"}
    finally:
        thread.close()


# --- the thread's recovery, with a stand-in follower -----------------------------------------


class StandIn:
    """Duck-types CompactedFollower: fails its first load, then serves scripted polls."""

    made = 0

    def __init__(self, fail_load: bool, polls: list[dict[str, str]]) -> None:
        StandIn.made += 1
        self.fail_load = fail_load
        self.polls = polls
        self.values: dict[str, str] = {}
        self.applied: dict[int, int] = {}
        self.loaded = False
        self.closed = False

    def look_now(self) -> None:
        pass

    def load(self) -> None:
        if self.fail_load:
            raise CompactedTopicError("broker away")
        self.values = {"a": "one"}
        self.loaded = True

    def poll(self, timeout_s: float = 0) -> set[str]:
        time.sleep(timeout_s)
        if not self.polls:
            return set()
        step = self.polls.pop(0)
        if step == {"raise": "yes"}:
            raise RuntimeError("fatal consumer error")
        changed = {k for k in set(self.values) | set(step) if self.values.get(k) != step.get(k)}
        self.values = step
        return changed

    def close(self) -> None:
        self.closed = True


def test_the_thread_retries_a_failed_load_and_a_failed_poll_without_dying() -> None:
    made: list[StandIn] = []
    scripts = [
        (True, []),  # the first follower cannot load
        (False, [{"a": "one", "b": "two"}, {"raise": "yes"}]),  # loads, changes once, then fails
        (False, [{"a": "uno"}]),  # made again: loads, then one more change
    ]

    def make() -> StandIn:
        fail, polls = scripts[min(len(made), len(scripts) - 1)]
        follower = StandIn(fail, list(polls))
        made.append(follower)
        return follower

    changes: list[set[str]] = []
    thread = FollowerThread(make, poll_s=0.01, retry_s=0.01, on_change=changes.append)  # type: ignore[arg-type]
    thread.start()
    try:
        assert thread.wait_until_caught_up(WAIT_S)
        wait_for(lambda: thread.values == {"a": "uno"}, "the third follower's change")
        assert thread.errors == 2
        assert len(made) == 3 and made[0].closed and made[1].closed and not made[2].closed
        # load of #2: {a}; its poll: {b}; load of #3 changes nothing ({a: one}) but drops b; its poll: {a}.
        assert changes == [{"a"}, {"b"}, {"b"}, {"a"}]
    finally:
        thread.close()
    assert made[2].closed, "close() closes the follower"


def test_a_failing_change_callback_does_not_stop_the_thread() -> None:
    def make() -> StandIn:
        return StandIn(False, [{"a": "one", "b": "two"}])

    def explode(keys: set[str]) -> None:
        raise RuntimeError("callback bug")

    thread = FollowerThread(make, poll_s=0.01, on_change=explode)  # type: ignore[arg-type]
    thread.start()
    try:
        wait_for(lambda: thread.values == {"a": "one", "b": "two"}, "both values")
        assert thread.errors == 0
    finally:
        thread.close()


def test_wait_until_caught_up_times_out_while_the_broker_is_away() -> None:
    thread = FollowerThread(lambda: StandIn(True, []), retry_s=0.01)  # type: ignore[arg-type]
    thread.start()
    try:
        assert thread.wait_until_caught_up(0.3) is False
        assert not thread.caught_up and thread.values == {}
        assert thread.errors >= 1
    finally:
        thread.close()


# --- the view: followed in memory, written with its echo -------------------------------------


@pytest.mark.integration
def test_a_view_write_returns_once_the_view_shows_it(kafka_bootstrap: str, unique_name: str) -> None:
    skipped: list[int] = []
    view = CompactedView(
        kafka_bootstrap, unique_name, decode, on_skipped=lambda: skipped.append(1), timeout_s=15
    )
    view.start()
    try:
        assert view.read() == {}  # the topic does not exist yet: an empty view, not an error
        view.write(records(a="one", b="two"))  # creates the topic: the view finds it at once
        assert view.values == {"a": "one", "b": "two"}
        view.write(records(a=None, c="three"))
        assert view.values == {"b": "two", "c": "three"}
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(unique_name, key=b"b", value=b"LOUD")  # refused: b keeps "two", counted
        assert producer.flush(30) == 0
        view.write(records(d="four"))
        assert view.values == {"b": "two", "c": "three", "d": "four"}
        assert skipped == [1]
    finally:
        view.close()


@pytest.mark.integration
def test_a_write_the_view_never_reads_back_is_a_clear_error(kafka_bootstrap: str, unique_name: str) -> None:
    view = CompactedView(kafka_bootstrap, unique_name, decode, timeout_s=15)
    view.start()
    assert view.wait_until_caught_up(15)
    view.close()  # stops following: nothing written from now on is applied
    with pytest.raises(CompactedTopicError, match=r"stored in topic .* but not read back within 1 s"):
        view.write(records(a="one"), timeout_s=1)
    assert read_compacted(kafka_bootstrap, unique_name, decode).values == {"a": "one"}


def test_the_writes_of_a_process_share_one_producer(
    kafka_bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer (and a metadata look-up) per write cost a console half a second a change."""
    made = count_kafka_clients(monkeypatch, "producer", "admin")
    writer = CompactedWriter(kafka_bootstrap, timeout_s=15)
    first = CompactedView(kafka_bootstrap, unique_name, decode, timeout_s=15, writer=writer)
    second = CompactedView(kafka_bootstrap, f"{unique_name}-2", decode, timeout_s=15, writer=writer)
    for view in (first, second):
        view.start()
    try:
        for n in range(4):
            first.write(records(a=f"v{'x' * n}"))
            second.write(records(b=f"w{'x' * n}"))
        assert first.read() == {"a": "vxxx"} and second.read() == {"b": "wxxx"}
    finally:
        first.close()
        second.close()
        writer.close()
    # One producer; an admin client only to create each missing topic.
    assert sorted(made) == ["admin", "admin", "producer"]


def test_a_view_never_loaded_refuses_to_answer() -> None:
    view = CompactedView(CLOSED, "settings", decode, timeout_s=0.5)
    view.start()
    try:
        with pytest.raises(CompactedTopicError, match="has not been read yet"):
            view.read(0.3)
    finally:
        view.close()


# --- bounded reads: the records of the last seconds only -------------------------------------


def stamped(topic: str, bootstrap: str, stamps_ms: list[int]) -> None:
    """Records k0, k1... with the given timestamps, in one go."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for index, stamp in enumerate(stamps_ms):
        producer.produce(topic, key=f"k{index % 7}".encode(), value=f"v{index}".encode(), timestamp=stamp)
    assert producer.flush(30) == 0


@pytest.mark.integration
def test_the_first_offset_since_a_time_is_found_by_a_few_reads(
    kafka_bootstrap: str, unique_name: str
) -> None:
    ensure_compacted_topic(kafka_bootstrap, unique_name)
    start = int(time.time() * 1000) - 1_000_000
    stamps = [start + 1000 * index for index in range(700)]  # one a second
    stamped(unique_name, kafka_bootstrap, stamps)

    def probe() -> Consumer:
        return side_consumer(kafka_bootstrap, {"fetch.wait.max.ms": READ_FETCH_WAIT_MS}, "test")

    # At or before the first new record (the reader drops older ones), never reading more than
    # about four times the window beyond it.
    for first in (0, 1, 9, 350, 691, 692, 699, 700):
        cutoff = stamps[first] - 500 if first < 700 else stamps[-1] + 1
        found = first_offset_since(probe, unique_name, 0, (0, 700), cutoff, 15)
        assert found <= first and 700 - found <= 5 * (700 - first) + 16, (first, found)
    assert first_offset_since(probe, unique_name, 0, (100, 700), stamps[0], 15) == 100


@pytest.mark.integration
def test_a_bounded_read_reads_the_recent_records_only(kafka_bootstrap: str, unique_name: str) -> None:
    ensure_compacted_topic(kafka_bootstrap, unique_name)
    now = int(time.time() * 1000)
    stamped(unique_name, kafka_bootstrap, [now - 3_600_000 + index for index in range(500)])  # an hour ago
    write_compacted(kafka_bootstrap, unique_name, records(k1="new", x="fresh"))
    snapshot = read_compacted(kafka_bootstrap, unique_name, decode, since_s=60)
    assert (snapshot.values, snapshot.records) == ({"k1": "new", "x": "fresh"}, 2)
    assert len(read_compacted(kafka_bootstrap, unique_name, decode).values) == 8
