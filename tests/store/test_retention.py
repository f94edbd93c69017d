"""Retention and forgetting on a real SQLite database: old rows go with their pictures and their
search variants, a forgotten plate leaves no sighting, alert, picture or index entry, audited."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from store_records import FAKE_JPEG, T0, plate_alert, plate_sighting

from stream_worker.store.database import Database, default_url
from stream_worker.store.plate_keys import fold
from stream_worker.store.retention import Deleted, expire, forget
from stream_worker.store.schema import alerts, audit, pictures, plate_variants, sightings
from stream_worker.store.writer import write_batch


@pytest.fixture()
def database(tmp_path: Path) -> Database:
    database = Database(default_url(tmp_path))
    database.migrate()
    return database


def count(database: Database, table, *where) -> int:
    with database.connect() as connection:
        return connection.execute(select(func.count()).select_from(table).where(*where)).scalar_one()


def test_rows_past_the_retention_period_go_with_their_pictures_and_variants(database: Database) -> None:
    old, new = T0 - timedelta(days=40), T0 - timedelta(days=1)
    with database.begin() as connection:
        write_batch(
            connection,
            [
                plate_sighting("old", "A123BC77", last_seen=old, picture=FAKE_JPEG),
                plate_sighting("new", "B840CK197", last_seen=new, picture=FAKE_JPEG),
            ],
            [plate_alert("old", "A123BC77", alerted_at=old), plate_alert("new", "B840CK197", alerted_at=new)],
        )
    with database.begin() as connection:
        deleted = expire(connection, retention_days=30, now=T0)
    assert (deleted.sightings, deleted.alerts, deleted.pictures) == (1, 1, 1) and deleted.variants > 0
    assert count(database, sightings) == count(database, alerts) == count(database, pictures) == 1
    assert count(database, plate_variants, plate_variants.c.text_key == fold("A123BC77")) == 0
    assert count(database, plate_variants, plate_variants.c.text_key == fold("B840CK197")) > 0


def test_no_retention_period_keeps_everything(database: Database) -> None:
    with database.begin() as connection:
        write_batch(connection, [plate_sighting("old", "A123BC77", last_seen=T0 - timedelta(days=999))], [])
    with database.begin() as connection:
        assert expire(connection, retention_days=0, now=T0) == Deleted()
    assert count(database, sightings) == 1


def test_forget_erases_a_plate_and_its_look_alikes_and_nothing_else(database: Database) -> None:
    with database.begin() as connection:
        write_batch(
            connection,
            [
                plate_sighting("a", "B840CK197", picture=FAKE_JPEG),
                plate_sighting("b", "B840OK197", picture=FAKE_JPEG),  # a misread of the same plate
                plate_sighting("c", "A123BC77", picture=FAKE_JPEG),
            ],
            [plate_alert("x", "B840CK197", candidate="B840OK197"), plate_alert("y", "A123BC77")],
        )
    with database.begin() as connection:
        deleted = forget(connection, "b840ck197", user="operator")
    assert (deleted.sightings, deleted.alerts, deleted.pictures) == (2, 1, 2)
    with database.connect() as connection:
        assert set(connection.execute(select(sightings.c.text)).scalars()) == {"A123BC77"}
        assert set(connection.execute(select(alerts.c.plate)).scalars()) == {"A123BC77"}
        row = connection.execute(select(audit)).one()
    assert count(database, plate_variants, plate_variants.c.text_key == fold("B840CK197")) == 0
    assert (row.user, row.action) == ("operator", "store.forget")
    assert "B840" not in str(row.detail)  # the audit says that, not what
