"""The store's writer on a real SQLite database: a batch written twice is stored once, pictures go
with their sighting, every plate key brings its search variants."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from store_records import FAKE_JPEG, plate_alert, plate_sighting

from stream_worker.store.database import Database, default_url
from stream_worker.store.plate_keys import fold, variants
from stream_worker.store.schema import alerts, pictures, plate_variants, sightings
from stream_worker.store.writer import Written, write_batch


@pytest.fixture()
def database(tmp_path: Path) -> Database:
    database = Database(default_url(tmp_path))
    database.migrate()
    return database


def count(database: Database, table) -> int:
    with database.connect() as connection:
        return connection.execute(select(func.count()).select_from(table)).scalar_one()


def test_a_batch_written_twice_is_stored_once(database: Database) -> None:
    batch = [plate_sighting("a", "B840OK197", picture=FAKE_JPEG), plate_sighting("b", "A123BC77")]
    raised = [plate_alert("x", "B840CK197")]
    with database.begin() as connection:
        assert write_batch(connection, batch, raised) == Written(sightings=2, alerts=1, pictures=1)
    with database.begin() as connection:
        assert write_batch(connection, batch + batch, raised * 2) == Written()
    assert (count(database, sightings), count(database, alerts), count(database, pictures)) == (2, 1, 1)


def test_the_picture_is_kept_apart_from_the_record(database: Database) -> None:
    with database.begin() as connection:
        write_batch(connection, [plate_sighting("a", "B840OK197", picture=FAKE_JPEG)], [])
    with database.connect() as connection:
        row = connection.execute(select(sightings)).one()
        jpeg = connection.execute(select(pictures.c.jpeg)).scalar_one()
    assert jpeg == FAKE_JPEG and row.has_picture
    assert "image" not in row.record["best_read"]
    assert row.text_key == fold("B840OK197") and row.record["text"] == "B840OK197"


def test_each_plate_key_brings_its_variants_once(database: Database) -> None:
    with database.begin() as connection:
        write_batch(connection, [plate_sighting("a", "B840OK197"), plate_sighting("b", "B840CK197")], [])
    with database.connect() as connection:
        stored = set(connection.execute(select(plate_variants.c.variant, plate_variants.c.text_key)))
    key = fold("B840CK197")  # both texts fold to one key
    assert stored == {(variant, key) for variant in variants(key)}


def test_a_sighting_without_a_picture_has_none(database: Database) -> None:
    with database.begin() as connection:
        assert write_batch(connection, [plate_sighting("a", "A123BC77")], []).pictures == 0
    assert count(database, pictures) == 0
