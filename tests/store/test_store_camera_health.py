"""`stream-worker store` as its own process on the real local broker and a real SQLite store keeps
the cameras' health: the connector's status records on the camera-status topic become each
minute's state and the frames of the hour; a camera removed (a tombstone) leaves nothing; a record
that is not a status goes to store.dlq with the reason, and the records behind it are kept and
committed."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess, TopicReader, committed_offsets
from sqlalchemy import select
from store_records import T0, camera_status

from stream_worker.launchers.broker import create_topics
from stream_worker.store.database import Database, default_url
from stream_worker.store.reports import ReportRange, report
from stream_worker.store.schema import camera_health

pytestmark = pytest.mark.integration

WAIT_S = 120.0


def test_status_records_become_the_cameras_health(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topics = {name: f"{unique_name}-{name}" for name in ("sightings", "alerts", "status", "dlq")}
    create_topics(kafka_bootstrap, list(topics.values()), 1)
    records = [
        (b"gate", camera_status("gate", T0, 100).to_json()),
        (b"gate", camera_status("gate", T0.replace(second=5), 110).to_json()),  # the same minute
        (b"gate", b"{not json"),
        (b"yard", camera_status("yard", T0, 0, state="unreachable").to_json()),
        (b"yard", None),  # yard removed from the settings
        (b"gate", camera_status("gate", T0.replace(minute=1), 160).to_json()),
    ]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, value in records:
        producer.produce(topics["status"], value=value, key=key)
    assert producer.flush(30) == 0
    url = default_url(tmp_path / "data")
    group = f"{unique_name}-store"
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", group,
        "--sightings-topic", topics["sightings"],
        "--alerts-topic", topics["alerts"],
        "--camera-status-topic", topics["status"],
        "--dlq-topic", topics["dlq"],
        "--database-url", url,
        "--metrics-port", "0",
        "--no-console",
        "--retention-days", "0",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    reader = TopicReader(kafka_bootstrap, topics["dlq"], partitions=1)
    database = Database(url)
    try:
        deadline = time.monotonic() + WAIT_S
        while not reader.records or committed_offsets(kafka_bootstrap, group, topics["status"], 1) != {0: 6}:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() < deadline, store.log_tail()
            reader.poll(0.5)
        with database.connect() as connection:
            stored = connection.execute(select(camera_health.c.camera_id, camera_health.c.minutes)).all()
            rows = report(connection, "health", ReportRange(T0, T0.replace(hour=13))).rows
        assert sorted((camera, minutes[:3]) for camera, minutes in stored) == [
            ("gate", "SS."),
            ("yard", "U.."),
        ]
        assert rows == [
            ("2026-03-01T12:00Z", "gate", 60, 0, 2, 0, 0.033, "streaming:2"),
            ("2026-03-01T12:00Z", "yard", 0, 0, 0, 1, 0.0, "unreachable:1"),
        ]
        [letter] = reader.records
        assert letter.value == b"{not json" and letter.headers["error.reason"] == b"invalid_record"
        assert store.metric('stream_worker_store_rows_written_total{table="camera_health"}') == 3
        assert store.stop(signal.SIGTERM) == 0
    finally:
        reader.close()
        database.dispose()
        if store.is_running():
            store.stop(signal.SIGKILL)
