"""One record cannot blow up the store. `stream-worker store` as its own
process on the real local broker and a real database (SQLite and PostgreSQL): a sighting whose text
has 10,000 characters, one whose camera id has 255 (the column holds 128 on PostgreSQL) and alerts
whose ids are not UUIDs land in store.dlq with the reason, are counted, and the records behind them
are stored and committed; on PostgreSQL a record the database alone refuses (a NUL in a text) is
found by writing its batch again record by record."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess, TopicReader, committed_offsets
from sqlalchemy import func, select
from store_records import plate_alert, plate_sighting

from stream_worker.launchers.broker import create_topics
from stream_worker.store.database import Database, default_url
from stream_worker.store.schema import alerts, plate_variants, sightings

pytestmark = pytest.mark.integration

WAIT_S = 120.0


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return default_url(tmp_path / "data")
    return request.getfixturevalue("postgres_url")


def _with(message, **fields) -> bytes:
    """`message` as JSON with `fields` replaced, as a hostile or buggy producer would write it."""
    return orjson.dumps({**orjson.loads(message.to_json()), **fields})


def _count(database: Database, table) -> int:
    with database.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


def test_records_the_store_cannot_write_go_to_store_dlq_and_never_hold_back_the_rest(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, database_url: str
) -> None:
    topics = {name: f"{unique_name}-{name}" for name in ("sightings", "alerts", "dlq")}
    create_topics(kafka_bootstrap, list(topics.values()), 1)
    group = f"{unique_name}-store"
    postgres = database_url.startswith("postgresql")
    before = plate_sighting("before", "A001BC77")
    after = plate_sighting("after", "A002BC77")
    nul = plate_sighting("nul", "A003BC77")
    bad_sightings = [
        (b"gate", _with(plate_sighting("long", "A004BC77"), text="A" * 10_000), "text"),
        (b"x" * 255, _with(plate_sighting("camera", "A005BC77"), camera_id="x" * 255), "camera_id"),
        (
            b"gate",
            _with(plate_sighting("path", "A006BC77"), sighting_id="../alerts/x/acknowledge?"),
            "sighting_id",
        ),
        (b"gate", b"{not json", "json"),
    ]
    nul_value = _with(nul, text="A003\x00BC77")  # the contract takes it; PostgreSQL's text does not
    sighting_records = [(b"gate", before.to_json()), *[(k, v) for k, v, _ in bad_sightings]]
    sighting_records += [(b"gate", nul_value), (b"gate", after.to_json())]
    good_alert = plate_alert("good", "A001BC77")
    alert_records = [
        (b"gate", _with(plate_alert("path", "A001BC77"), alert_id="../cameras/gate-1/remove?")),
        (b"gate", good_alert.to_json()),
    ]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for topic, records in ((topics["sightings"], sighting_records), (topics["alerts"], alert_records)):
        for key, value in records:
            producer.produce(topic, value=value, key=key, headers=[("trace", b"t-1")])
    assert producer.flush(30) == 0

    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", group,
        "--sightings-topic", topics["sightings"],
        "--alerts-topic", topics["alerts"],
        "--dlq-topic", topics["dlq"],
        "--database-url", database_url,
        "--metrics-port", "0",
        "--no-console",
        "--retention-days", "0",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    database = Database(database_url)
    reader = TopicReader(kafka_bootstrap, topics["dlq"], partitions=1)
    expected_letters = len(bad_sightings) + 1 + (1 if postgres else 0)
    try:
        deadline = time.monotonic() + WAIT_S
        while len(reader.records) < expected_letters or _count(database, alerts) < 1:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() < deadline, f"{len(reader.records)} dead letters:\n{store.log_tail()}"
            reader.poll(0.5)
        reader.poll(1.0)
        with database.connect() as connection:
            stored = set(connection.execute(select(sightings.c.sighting_id)).scalars())
            stored_alerts = set(connection.execute(select(alerts.c.alert_id)).scalars())
        # The records behind the bad ones are stored; the bad ones are not (and made no index rows).
        assert stored == {before.sighting_id, after.sighting_id} | (set() if postgres else {nul.sighting_id})
        assert stored_alerts == {good_alert.alert_id}
        assert _count(database, plate_variants) < 100

        letters = {(r.headers["source.topic"].decode(), r.dlq_source[1]): r for r in reader.records}
        assert len(letters) == len(reader.records) == expected_letters, [r.headers for r in reader.records]
        for offset, (key, value, field) in enumerate(bad_sightings, start=1):
            letter = letters[(topics["sightings"], offset)]
            assert (letter.key, letter.value) == (key, value)  # the record as it came, to look at
            assert letter.headers["error.stage"] == b"store"
            assert letter.headers["error.reason"] == b"invalid_record"
            assert letter.headers["trace"] == b"t-1"  # its own headers kept
            detail = letter.headers["error.detail"].decode()
            assert detail.startswith("not a PlateSighting: ") and field in detail.lower(), detail
            assert len(detail) < 1000  # says what is wrong, never quotes the 10,000 characters
        alert_letter = letters[(topics["alerts"], 0)]
        assert alert_letter.headers["error.reason"] == b"invalid_record"
        assert b"alert_id" in alert_letter.headers["error.detail"]
        if postgres:
            nul_letter = letters[(topics["sightings"], 5)]
            assert nul_letter.value == nul_value
            assert nul_letter.headers["error.reason"] == b"unwritable_record"
            assert b"NUL" in nul_letter.headers["error.detail"]

        counted = sum(
            store.metric(f'stream_worker_store_dead_letters_total{{reason="{reason}",topic="{topic}"}}')
            for topic in (topics["sightings"], topics["alerts"])
            for reason in ("invalid_record", "unwritable_record")
        )
        assert counted == expected_letters
        assert store.stop(signal.SIGTERM) == 0
        # Committed past every record, the dead-lettered ones included: a restart reads none again.
        assert committed_offsets(kafka_bootstrap, group, topics["sightings"], 1) == {0: len(sighting_records)}
        assert committed_offsets(kafka_bootstrap, group, topics["alerts"], 1) == {0: len(alert_records)}
    finally:
        reader.close()
        database.dispose()
        if store.is_running():
            store.stop(signal.SIGKILL)
