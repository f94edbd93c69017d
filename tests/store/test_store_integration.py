"""`stream-worker store` as its own process, on the real local broker and a real database (SQLite
and PostgreSQL): every sighting and alert stored exactly once, across SIGKILLs mid-stream, and each
sighting counted once in the reports' counts; every visit one row with its last state, its events
delivered twice and the store SIGKILLed; records that are not the contract dead-lettered
(test_store_dead_letters.py); offsets committed only for what is stored."""

from __future__ import annotations

import random
import signal
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess, committed_offsets
from sqlalchemy import func, select
from store_records import FAKE_JPEG, T0, counted_again, plate_alert, plate_sighting, plate_visit

from stream_worker.launchers.broker import create_topics
from stream_worker.store.database import Database, default_url
from stream_worker.store.schema import alerts, pictures, sightings, visits

pytestmark = pytest.mark.integration

PARTITIONS = 3
SIGHTINGS, ALERTS, KILLS = 2000, 300, 5
WAIT_S = 120.0
PACE_S = 2.0  # each chunk is produced over this long


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return default_url(tmp_path / "data")
    return request.getfixturevalue("postgres_url")


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value=value, key=key)
        producer.poll(0)
    assert producer.flush(60) == 0


def produce_paced(bootstrap: str, chunk: list[tuple[str, bytes, bytes]]) -> None:
    """The chunk's records over PACE_S, as a stream would bring them."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    slices = 20
    for index in range(slices):
        for topic, key, value in chunk[index::slices]:
            producer.produce(topic, value=value, key=key)
        producer.poll(0)
        time.sleep(PACE_S / slices)
    assert producer.flush(60) == 0


def counts(database: Database) -> tuple[int, int, int]:
    with database.connect() as connection:
        return tuple(
            connection.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (sightings, alerts, pictures)
        )


def test_five_sigkills_mid_stream_leave_exactly_one_row_per_record(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, database_url: str
) -> None:
    topics = (f"{unique_name}-sightings", f"{unique_name}-alerts")
    create_topics(kafka_bootstrap, [*topics, f"{unique_name}-dlq", f"{unique_name}-visits"], PARTITIONS)
    group = f"{unique_name}-store"
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", group,
        "--sightings-topic", topics[0],
        "--alerts-topic", topics[1],
        "--visits-topic", f"{unique_name}-visits",
        "--dlq-topic", f"{unique_name}-dlq",
        "--database-url", database_url,
        "--session-timeout-ms", "3000",  # a killed store's partitions go to its restart this soon
        "--metrics-port", "0",
        "--batch-records", "50",
        "--no-console",
        "--retention-days", "0",  # the records are from March: a retention period would delete them
    ]  # fmt: skip
    made_sightings = [
        plate_sighting(
            f"s{k}", f"A{k % 1000:03d}BC77", camera_id=f"gate-{k % 7}", picture=FAKE_JPEG if k % 3 else None
        )
        for k in range(SIGHTINGS)
    ]
    made_alerts = [plate_alert(f"a{k}", f"A{k:03d}BC77", camera_id=f"gate-{k % 7}") for k in range(ALERTS)]
    records = [(topics[0], s.camera_id.encode(), s.to_json()) for s in made_sightings]
    records += [(topics[1], a.camera_id.encode(), a.to_json()) for a in made_alerts]
    random.Random(7).shuffle(records)
    chunks = [records[k :: KILLS + 1] for k in range(KILLS + 1)]
    # A record that is not a PlateSighting: counted and skipped, never stored, never blocking.
    produce(kafka_bootstrap, topics[0], [(b"gate-0", b"{not json")])

    started: list[ServiceProcess] = []

    def start() -> ServiceProcess:
        log = tmp_path / f"store-{len(started)}.log"
        started.append(ServiceProcess(args, log, command="store", started="store started").start())
        return started[-1]

    database = Database(database_url)
    mid_stream: list[bool] = []
    try:
        rng = random.Random(11)
        for chunk in chunks[:KILLS]:
            store = start()
            store.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "an assignment")
            before = sum(counts(database)[:2])
            producing = threading.Thread(target=produce_paced, args=(kafka_bootstrap, chunk))
            producing.start()
            time.sleep(rng.uniform(0.5, PACE_S))  # mid-stream: some batches written, some not
            assert store.is_running(), store.log_tail()
            store.stop(signal.SIGKILL)
            at_kill = sum(counts(database)[:2])
            producing.join()
            mid_stream.append(before < at_kill < before + len(chunk))
        # At least one SIGKILL fell while this store was writing a chunk, not before or after it.
        assert any(mid_stream), mid_stream
        store = start()
        produce_paced(kafka_bootstrap, chunks[-1])

        expected = (SIGHTINGS, ALERTS, sum(1 for s in made_sightings if s.best_read.image))
        deadline = time.monotonic() + WAIT_S
        while counts(database) != expected:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() < deadline, f"stored {counts(database)}, expected {expected}"
            time.sleep(0.5)
        with database.connect() as connection:
            stored_ids = set(connection.execute(select(sightings.c.sighting_id)).scalars())
            stored_alert_ids = set(connection.execute(select(alerts.c.alert_id)).scalars())
            kept, again = counted_again(connection)  # the reports' counts: each sighting once
        assert stored_ids == {s.sighting_id for s in made_sightings}
        assert stored_alert_ids == {a.alert_id for a in made_alerts}
        assert kept == again
        assert sum(n for _, _, n in kept["sighting_days"]) == SIGHTINGS
        # Everything stored is committed, and a clean stop leaves nothing behind.
        assert store.stop(signal.SIGTERM) == 0
        for topic in topics:
            committed = committed_offsets(kafka_bootstrap, group, topic, PARTITIONS)
            assert all(offset >= 0 for offset in committed.values()), committed
        assert counts(database) == expected
        database.dispose()
    finally:
        for service in started:
            if service.is_running():
                service.stop(signal.SIGKILL)
    # The record that is not a PlateSighting was dead-lettered by the first start that read it.
    lines = [line for service in started for line in service.log_lines()]
    skipped = [line for line in lines if line.get("msg") == "record dead-lettered"]
    assert skipped and skipped[0]["offset"] == 0


def test_an_alerts_topic_created_after_the_start_is_said_missing_then_read_within_seconds(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The store joins with its sightings topic alone; its alerts topic, created later, is read
    within seconds, not at librdkafka's next metadata refresh (5 minutes)."""
    sightings_topic, alerts_topic = f"{unique_name}-sightings", f"{unique_name}-alerts"
    status_topic, visits_topic = f"{unique_name}-status", f"{unique_name}-visits"
    create_topics(
        kafka_bootstrap, [sightings_topic, status_topic, visits_topic, f"{unique_name}-dlq"], PARTITIONS
    )
    url = default_url(tmp_path / "data")
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", f"{unique_name}-store",
        "--sightings-topic", sightings_topic,
        "--alerts-topic", alerts_topic,
        "--camera-status-topic", status_topic,
        "--visits-topic", visits_topic,
        "--dlq-topic", f"{unique_name}-dlq",
        "--database-url", url,
        "--session-timeout-ms", "6000",  # the local broker holds a rejoin for about half of it
        "--metrics-port", "0",
        "--no-console",
        "--retention-days", "0",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    try:
        missing = "subscribed topic does not exist: nothing of it is read until it is created"
        said = store.wait_for_log(lambda line: line.get("msg") == missing, "the missing topic said")
        assert said["level"] == "WARNING" and said["topic"] == alerts_topic
        store.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "the sightings' partitions")
        create_topics(kafka_bootstrap, [alerts_topic], PARTITIONS)
        produce(kafka_bootstrap, alerts_topic, [(b"gate-0", plate_alert("late", "A123BC77").to_json())])
        produced = time.monotonic()
        database = Database(url)
        while counts(database)[1] == 0:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() - produced < 30, f"the alert was not stored:\n{store.log_tail()}"
            time.sleep(0.2)
        waited = time.monotonic() - produced
        assert waited < 10, f"the alert was stored {waited:.1f} s after it was produced"
        assert [line for line in store.log_lines() if line.get("msg") == missing] == [said]
        print(f"\nthe alert on the topic created late was stored {waited:.1f} s after it was produced")
    finally:
        store.stop(signal.SIGKILL)


VISITS = 300


def test_visit_events_twice_and_a_sigkill_leave_one_row_per_visit_in_its_last_state(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, database_url: str
) -> None:
    """300 visits on 6 sites (key = site): each opened, two in three closed (some after an
    overstay), every event produced twice, the store SIGKILLed mid-stream and started again."""
    topic = f"{unique_name}-visits"
    create_topics(kafka_bootstrap, [topic, f"{unique_name}-sightings", f"{unique_name}-alerts"], PARTITIONS)
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", f"{unique_name}-store",
        "--sightings-topic", f"{unique_name}-sightings",
        "--alerts-topic", f"{unique_name}-alerts",
        "--visits-topic", topic,
        "--dlq-topic", f"{unique_name}-dlq",
        "--database-url", database_url,
        "--session-timeout-ms", "3000",
        "--metrics-port", "0",
        "--batch-records", "40",
        "--no-console",
        "--retention-days", "0",
    ]  # fmt: skip
    events, expected = [], {}
    for k in range(VISITS):
        site, entered = f"site-{k % 6}", T0 + timedelta(minutes=k)
        opened = plate_visit(f"v{k}", f"A{k:03d}BC77", entered_at=entered, site=site, overstay_s=600)
        events.append(opened)
        if k % 5 == 0:
            events.append(
                plate_visit(f"v{k}", opened.plate, "overstay", entered_at=entered, site=site, overstay_s=600)
            )
        if k % 3:
            dwell = timedelta(minutes=k % 50 + 1)
            events.append(
                plate_visit(f"v{k}", opened.plate, "closed", dwell=dwell, entered_at=entered, site=site)
            )
            expected[opened.visit_id] = dwell.total_seconds()
        else:
            expected[opened.visit_id] = None
    records = [
        (topic, e.site.encode(), e.to_json()) for e in events for _ in range(2)
    ]  # each twice, in order
    started: list[ServiceProcess] = []

    def start() -> ServiceProcess:
        log = tmp_path / f"store-visits-{len(started)}.log"
        started.append(ServiceProcess(args, log, command="store", started="store started").start())
        return started[-1]

    def stored() -> dict[str, float | None]:
        with database.connect() as connection:
            return {
                row.visit_id: row.dwell_s
                for row in connection.execute(select(visits.c.visit_id, visits.c.dwell_s))
            }

    database = Database(database_url)
    try:
        store = start()
        store.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "an assignment")
        producing = threading.Thread(target=produce_paced, args=(kafka_bootstrap, records))
        producing.start()
        time.sleep(PACE_S / 2)
        store.stop(signal.SIGKILL)
        producing.join()
        store = start()
        deadline = time.monotonic() + WAIT_S
        while stored() != expected:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() < deadline, f"{len(stored())} visits stored, {len(expected)} expected"
            time.sleep(0.5)
        with database.connect() as connection:
            overstayed = connection.execute(
                select(visits.c.visit_id).where(visits.c.overstayed_at.is_not(None))
            )
            assert len(overstayed.all()) == VISITS // 5
            assert connection.execute(select(func.count()).select_from(visits)).scalar_one() == VISITS
        assert store.stop(signal.SIGTERM) == 0
    finally:
        database.dispose()
        for service in started:
            if service.is_running():
                service.stop(signal.SIGKILL)
