"""Retention on the durable local broker: records past retention.ms / retention.bytes really go.

Tansu keeps these topic configs without applying them; the object store under it deletes the
expired record batches (launchers/retention.py). Checked against a real Tansu: the files go, the
log start offset moves, a group committed below it and a new group both read on from the first
record left, compacted topics and topics without retention keep everything, the broker serves on.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from stream_worker.launchers.broker import LocalBroker, create_topics
from stream_worker.service.compacted import ensure_compacted_topic

RECORD = b"x" * 1000
BATCH = 10  # records per flush: one stored batch or a few


def _produce(bootstrap: str, topic: str, batches: int, key: bytes | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for _ in range(batches):
        for _ in range(BATCH):
            producer.produce(topic, RECORD, key=key)
        producer.flush(30)


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,
            "heartbeat.interval.ms": 500,
        }
    )


def _low_watermark(bootstrap: str, topic: str) -> int:
    consumer = _consumer(bootstrap, "probe")
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0])
    finally:
        consumer.close()


def _read(bootstrap: str, group: str, topic: str, count: int, commit: bool = False) -> list[int]:
    consumer = _consumer(bootstrap, group)
    consumer.subscribe([topic])
    offsets: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while len(offsets) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                offsets.append(message.offset())
                if commit:
                    consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()
    return offsets


def _batch_files(data_dir: Path, topic: str) -> list[Path]:
    return sorted(data_dir.glob(f"tansu/clusters/*/topics/{topic}/partitions/*/records/*.batch"))


def _bytes(paths: list[Path]) -> int:
    return sum(path.stat().st_size for path in paths)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_records_past_retention_ms_are_deleted_and_consumers_read_on(tmp_path: Path) -> None:
    data_dir = tmp_path / "broker"
    with LocalBroker(data_dir=data_dir, retention_interval_s=0.5) as broker:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, ["short"], 1, {"retention.ms": "3000"})
        create_topics(bootstrap, ["kept"], 1)
        ensure_compacted_topic(bootstrap, "table")
        for topic in ("short", "kept"):
            _produce(bootstrap, topic, 10)
        _produce(bootstrap, "table", 10, key=b"camera")
        lagging = _consumer(bootstrap, "lagging")
        lagging.commit(offsets=[TopicPartition("short", 0, 5)], asynchronous=False)
        lagging.close()
        old_bytes = _bytes(_batch_files(data_dir, "short"))
        kept_files, table_files = _batch_files(data_dir, "kept"), _batch_files(data_dir, "table")
        assert len(_batch_files(data_dir, "short")) >= 10

        time.sleep(3.5)
        _produce(bootstrap, "short", 1)  # a fresh batch: everything before it has expired
        deadline = time.monotonic() + 15
        while _low_watermark(bootstrap, "short") < 100 and time.monotonic() < deadline:
            time.sleep(0.5)

        assert _low_watermark(bootstrap, "short") == 100
        assert all(int(path.stem) >= 100 for path in _batch_files(data_dir, "short"))
        assert _bytes(_batch_files(data_dir, "short")) < old_bytes / 5
        assert _read(bootstrap, "lagging", "short", BATCH, commit=True) == list(range(100, 110))
        assert _read(bootstrap, "newcomer", "short", BATCH) == list(range(100, 110))
        assert _batch_files(data_dir, "kept") == kept_files and _low_watermark(bootstrap, "kept") == 0
        assert _batch_files(data_dir, "table") == table_files and _low_watermark(bootstrap, "table") == 0
        _produce(bootstrap, "short", 1)
        assert _read(bootstrap, "lagging", "short", BATCH) == list(range(110, 120))
        assert broker.is_serving()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_partition_over_retention_bytes_loses_its_oldest_batches(tmp_path: Path) -> None:
    data_dir = tmp_path / "broker"
    with LocalBroker(data_dir=data_dir, retention_interval_s=0.5) as broker:
        bootstrap = broker.bootstrap_servers
        create_topics(bootstrap, ["capped"], 1, {"retention.bytes": "50000", "retention.ms": "-1"})
        _produce(bootstrap, "capped", 12)  # about 10 KB a flush
        newest = _batch_files(data_dir, "capped")[-1].name
        deadline = time.monotonic() + 15
        while _bytes(_batch_files(data_dir, "capped")) > 50000 and time.monotonic() < deadline:
            time.sleep(0.5)
        files = _batch_files(data_dir, "capped")
        assert 30000 < _bytes(files) <= 50000
        assert files[-1].name == newest
        assert _low_watermark(bootstrap, "capped") == int(files[0].stem)
        assert _read(bootstrap, "reader", "capped", BATCH * len(files))[0] == int(files[0].stem)
