"""The watch-list store on the real local broker: compacted topic, last record wins, tombstones,
undecodable records skipped and reported, deliveries awaited."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.watchlists.topic import (
    SkippedRecord,
    WatchlistStoreError,
    ensure_topic,
    read_watchlist,
    write_changes,
)

ADDED = datetime(2026, 3, 1, tzinfo=UTC)
CLOSED = "127.0.0.1:9"  # nothing listens there


def _entry(plate: str, list_name: str = "stolen", **fields: object) -> WatchEntry:
    return WatchEntry(plate=plate, list=list_name, added_at=ADDED, **fields)


@pytest.mark.integration
def test_a_missing_topic_reads_as_an_empty_list_and_is_not_created(kafka_bootstrap: str, unique_name: str):
    snapshot = read_watchlist(kafka_bootstrap, unique_name)
    assert (snapshot.topic_exists, snapshot.values, snapshot.skipped) == (False, {}, [])
    assert (
        unique_name not in AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=10).topics
    )


@pytest.mark.integration
def test_write_creates_a_compacted_topic(kafka_bootstrap: str, unique_name: str) -> None:
    assert write_changes(kafka_bootstrap, unique_name, [_entry("B840CK197")]) == 1
    assert ensure_topic(kafka_bootstrap, unique_name) is False  # exists now
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, unique_name)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"


@pytest.mark.integration
def test_latest_record_wins_and_tombstones_remove(kafka_bootstrap: str, unique_name: str) -> None:
    write_changes(kafka_bootstrap, unique_name, [_entry("B840CK197"), _entry("A123BC77"), _entry("X001XX99")])
    write_changes(
        kafka_bootstrap,
        unique_name,
        [_entry("B840CK197", "residents", label="moved")],
        removals=["a 123 bc 77"],
    )
    snapshot = read_watchlist(kafka_bootstrap, unique_name)
    assert snapshot.values == {
        "B840CK197": _entry("B840CK197", "residents", label="moved"),
        "X001XX99": _entry("X001XX99"),
    }
    assert (snapshot.records, snapshot.skipped, snapshot.topic_exists) == (5, [], True)


@pytest.mark.integration
def test_a_big_batch_is_read_to_its_last_record_on_every_partition(kafka_bootstrap: str, unique_name: str):
    # Several partitions, and enough records in one produce call for multi-record batches (the
    # local broker reports a partition's end at its last batch's first offset + 1).
    ensure_topic(kafka_bootstrap, unique_name, partitions=3)
    entries = [_entry(f"{letter}{number:03d}BC77") for letter in "AB" for number in range(1000)]
    assert write_changes(kafka_bootstrap, unique_name, entries) == 2000
    snapshot = read_watchlist(kafka_bootstrap, unique_name)
    assert snapshot.values == {entry.plate: entry for entry in entries}


@pytest.mark.integration
def test_undecodable_records_are_skipped_and_reported(kafka_bootstrap: str, unique_name: str) -> None:
    write_changes(kafka_bootstrap, unique_name, [_entry("B840CK197")])
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(unique_name, key=b"B840CK197", value=b"not json")
    producer.produce(unique_name, key=b"b840ck197", value=_entry("B840CK197").to_json())
    producer.produce(unique_name, key=None, value=b"{}")
    assert producer.flush(30) == 0
    write_changes(kafka_bootstrap, unique_name, [_entry("A123BC77")])
    snapshot = read_watchlist(kafka_bootstrap, unique_name)
    assert set(snapshot.values) == {"B840CK197", "A123BC77"}  # the bad records change nothing
    assert [(skipped.partition, skipped.offset) for skipped in snapshot.skipped] == [(0, 1), (0, 2), (0, 3)]
    reasons = [skipped.reason for skipped in snapshot.skipped]
    assert "not JSON" in reasons[0] and "normalised" in reasons[1] and "no key" in reasons[2]
    assert str(snapshot.skipped[0]).startswith("partition 0 offset 1: ")
    assert isinstance(snapshot.skipped[0], SkippedRecord)


def test_nothing_to_write_needs_no_broker() -> None:
    assert write_changes(CLOSED, "watchlist", [], []) == 0


def test_an_unreachable_broker_is_an_error_not_a_hang() -> None:
    with pytest.raises(WatchlistStoreError):
        read_watchlist(CLOSED, "watchlist", timeout_s=1)
    with pytest.raises(WatchlistStoreError):
        write_changes(CLOSED, "watchlist", [_entry("B840CK197")], timeout_s=1)
