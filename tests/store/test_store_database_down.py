"""`stream-worker store` when its database fails (a real SQLite or PostgreSQL whose sightings table
is taken away under it, then given back): the batch is written again and again, nothing is
committed past what is stored, /readyz says why; once the table is back everything is stored once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess, committed_offsets
from sqlalchemy import func, select, text
from store_records import plate_sighting

from stream_worker.launchers.broker import create_topics
from stream_worker.store.database import Database, default_url
from stream_worker.store.schema import sightings

pytestmark = pytest.mark.integration

WAIT_S = 60.0


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return default_url(tmp_path / "data")
    return request.getfixturevalue("postgres_url")


def produce(bootstrap: str, topic: str, names: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for k in names:
        producer.produce(topic, value=plate_sighting(f"s{k}", f"A{k:03d}BC77").to_json(), key=b"gate")
    assert producer.flush(30) == 0


def wait_until(condition, what: str, store: ServiceProcess) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert store.is_running(), store.log_tail()
        assert time.monotonic() < deadline, f"not {what}:\n{store.log_tail()}"
        time.sleep(0.2)


def test_a_failing_database_holds_the_offsets_until_it_is_back(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, database_url: str
) -> None:
    topics = [f"{unique_name}-sightings", f"{unique_name}-alerts"]
    create_topics(kafka_bootstrap, topics, 1)
    group = f"{unique_name}-store"
    args = [
        "--bootstrap-servers", kafka_bootstrap, "--group-id", group,
        "--sightings-topic", topics[0], "--alerts-topic", topics[1],
        "--database-url", database_url, "--session-timeout-ms", "3000",
        "--metrics-port", "0", "--no-console", "--retention-days", "0",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    database = Database(database_url)

    def count() -> int:
        with database.connect() as connection:
            return connection.execute(select(func.count()).select_from(sightings)).scalar_one()

    def rename(old: str, new: str) -> None:
        with database.begin() as connection:
            connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))

    try:
        store.started_port()
        produce(kafka_bootstrap, topics[0], range(20))
        wait_until(lambda: count() == 20, "20 stored", store)
        wait_until(
            lambda: committed_offsets(kafka_bootstrap, group, topics[0], 1) == {0: 20}, "20 committed", store
        )

        rename("sightings", "sightings_away")
        produce(kafka_bootstrap, topics[0], range(20, 40))
        wait_until(lambda: store.scrape("/readyz")[0] == 503, "unready", store)
        assert "database writes failing" in store.scrape("/readyz")[1]
        wait_until(lambda: store.metric("stream_worker_store_write_failures_total") >= 2, "retried", store)
        assert committed_offsets(kafka_bootstrap, group, topics[0], 1) == {0: 20}  # nothing past the stored

        rename("sightings_away", "sightings")
        wait_until(lambda: count() == 40, "40 stored", store)
        wait_until(
            lambda: committed_offsets(kafka_bootstrap, group, topics[0], 1) == {0: 40}, "40 committed", store
        )
        wait_until(lambda: store.scrape("/readyz")[0] == 200, "ready again", store)
        assert store.stop(signal.SIGTERM) == 0
        with database.connect() as connection:
            assert (
                connection.execute(select(func.count(sightings.c.sighting_id.distinct()))).scalar_one() == 40
            )
    finally:
        if store.is_running():
            store.stop(signal.SIGKILL)
        database.dispose()
