"""The reports' counts the writer keeps (report_counts.py), SQLite and PostgreSQL alike: the
hourly, daily and unique-plates reports read them for a range's whole hours and days and answer
exactly what counting the sightings says, over ranges cut anywhere, after batches replayed,
corrections, retention and `forget`; the counts are those counting again gives; migration 0009
counts the sightings stored before it."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import insert, select
from store_records import T0, counted_again, plate_sighting

from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.store import corrections
from stream_worker.store.database import MIGRATIONS, Database
from stream_worker.store.reports import ReportRange, report
from stream_worker.store.retention import expire, forget
from stream_worker.store.rows import utc
from stream_worker.store.schema import sightings
from stream_worker.store.writer import sighting_row, write_batch

START = T0 - timedelta(days=1, hours=5)  # 2026-02-28 07:00 UTC
SPREAD = timedelta(days=4, hours=9)
CAMERAS = ("gate-1", "gate-2", "yard", "Yard-B")
# Look-alikes (one folded key), a plate in lower case, and others.
PLATES = ("B840OK197", "B840CK197", "8840CK197", "b840ok197", "A123BC77", "X777XX77", "M001MM99", "E555KX50")


def generated(count: int, seed: int) -> list[Any]:
    rng = random.Random(seed)
    return [
        plate_sighting(
            f"g{seed}-{k}",
            rng.choice(PLATES),
            START + timedelta(microseconds=rng.randrange(int(SPREAD.total_seconds() * 1e6))),
            camera_id=rng.choice(CAMERAS),
        )
        for k in range(count)
    ]


def expected(connection: Any, name: str, span: ReportRange) -> list[tuple[Any, ...]]:
    """The report counted in Python from the sightings stored."""
    stored = connection.execute(select(sightings.c.camera_id, sightings.c.last_seen, sightings.c.text_key))
    seen = [
        (camera, at, key)
        for camera, last_seen, key in stored
        if span.since <= (at := utc(last_seen)) < span.until and span.camera in (None, camera)
    ]
    if name == "plates":
        per_day: dict[str, list[str]] = {}
        for _, at, key in seen:
            per_day.setdefault(f"{at:%Y-%m-%d}", []).append(key)
        return [(day, len(keys), len(set(keys))) for day, keys in sorted(per_day.items())]
    label = "{:%Y-%m-%dT%H}:00Z" if name == "hourly" else "{:%Y-%m-%d}"
    counts = Counter((label.format(at), camera) for camera, at, _ in seen)
    return sorted((at, camera, n) for (at, camera), n in counts.items())


def spans(seed: int) -> Iterator[ReportRange]:
    """Ranges on whole days and hours, cut inside them, shorter than an hour, in another zone, of
    one camera, and random ones."""
    midnight = datetime(2026, 3, 1, tzinfo=UTC)
    yield ReportRange(midnight - timedelta(days=2), midnight + timedelta(days=4))
    yield ReportRange(midnight, midnight + timedelta(days=1))
    yield ReportRange(T0, T0 + timedelta(hours=1))
    yield ReportRange(T0 + timedelta(minutes=10), T0 + timedelta(minutes=50))
    yield ReportRange(T0 + timedelta(minutes=10), T0 + timedelta(hours=1, minutes=50))
    yield ReportRange(midnight - timedelta(microseconds=1), midnight + timedelta(days=2, microseconds=1))
    yield ReportRange(START, START + SPREAD, "yard")
    moscow = timezone(timedelta(hours=3))
    yield ReportRange(midnight.astimezone(moscow), (midnight + timedelta(days=2)).astimezone(moscow))
    rng = random.Random(seed)
    for _ in range(25):
        since = START - timedelta(hours=2) + timedelta(seconds=rng.randrange(int(SPREAD.total_seconds())))
        until = since + timedelta(seconds=rng.randrange(1, 3 * 86400))
        yield ReportRange(since, until, rng.choice((None, None, *CAMERAS)))


def assert_as_counted(database: Database) -> None:
    with database.connect() as connection:
        for span in spans(5):
            for name in ("hourly", "daily", "plates"):
                rows = report(connection, name, span).rows
                # The database's collation orders a bucket's cameras (Yard-B and yard), Python's the oracle.
                assert sorted(rows) == expected(connection, name, span), (name, span)
                assert [row[0] for row in rows] == sorted(row[0] for row in rows), (name, span)
        kept, again = counted_again(connection)
        assert kept == again


def _correction(sighting: Any, new_text: str, camera_id: str) -> Correction:
    return Correction(
        sighting_id=sighting.sighting_id,
        camera_id=camera_id,
        kind=CorrectionKind.CORRECT,
        old_text=sighting.text,
        new_text=new_text,
        corrected_by="ada",
        corrected_at=datetime.now(UTC),
    )


def test_the_reports_answer_as_counting_the_sightings_does(database: Database) -> None:
    made = generated(400, seed=1)
    batches = [made[k : k + 40] for k in range(0, len(made), 40)]
    for batch in batches:
        with database.begin() as connection:
            assert write_batch(connection, batch + batch[:3], []).sightings == len(batch)
        with database.begin() as connection:  # the batch read again after a crash: nothing twice
            assert write_batch(connection, batch, []).sightings == 0
    with database.begin() as connection:  # some new, some stored already
        assert write_batch(connection, generated(20, seed=2) + made[:20], []).sightings == 20
    assert_as_counted(database)
    with database.connect() as connection:
        before = [report(connection, name, span).rows for span in spans(7) for name in ("daily", "plates")]
    with database.begin() as connection:  # corrections change neither the text read nor the camera
        for sighting in made[::9]:
            corrections.save(connection, _correction(sighting, "T999TT99", "elsewhere"))
    with database.connect() as connection:
        after = [report(connection, name, span).rows for span in spans(7) for name in ("daily", "plates")]
    assert after == before
    assert_as_counted(database)
    with database.begin() as connection:
        assert forget(connection, "B840OK197").sightings > 0
        assert expire(connection, 3, now=START + timedelta(days=3, hours=7, minutes=30)).sightings > 0
    assert_as_counted(database)


def test_a_report_of_whole_days_reads_the_counts_not_the_sightings(database: Database) -> None:
    """The counts answer the whole days: a sighting deleted behind the writer's back is still
    counted there, and still in the range's partial first day, read from the sightings, is not."""
    midnight = datetime(2026, 3, 1, tzinfo=UTC)
    made = [
        plate_sighting("a", "A123BC77", midnight + timedelta(hours=1)),
        plate_sighting("b", "A123BC77", T0),
    ]
    with database.begin() as connection:
        write_batch(connection, made, [])
        connection.execute(sightings.delete())
    with database.connect() as connection:
        whole = ReportRange(midnight, midnight + timedelta(days=1))
        assert report(connection, "daily", whole).rows == [("2026-03-01", "gate", 2)]
        assert report(connection, "plates", whole).rows == [("2026-03-01", 2, 1)]
        assert (
            report(connection, "daily", ReportRange(midnight + timedelta(minutes=1), whole.until)).rows == []
        )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def unmigrated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    url = (
        f"sqlite:///{tmp_path}/history.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    store = Database(url)
    try:
        yield store
    finally:
        store.dispose()


def test_migration_0009_counts_the_sightings_stored_before_it(unmigrated: Database) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with unmigrated.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
    now = datetime.now(UTC)
    with unmigrated.begin() as connection:
        connection.execute(insert(sightings), [sighting_row(s, None, now) for s in generated(300, seed=3)])
    assert unmigrated.migrate() == "0009"
    assert_as_counted(unmigrated)
