"""`stream-worker store migrate` and `store forget PLATE` as typed (the root app, a real SQLite
store): exit codes, the confirmation, what is erased and said, the audit row; no password said."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from store_records import FAKE_JPEG, plate_alert, plate_sighting, stored_in
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.store.database import Database, default_url
from stream_worker.store.schema import audit, sightings


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return stored_in(
        tmp_path,
        [
            plate_sighting("a", "B840CK197", picture=FAKE_JPEG),
            plate_sighting("b", "B840OK197"),
            plate_sighting("c", "A123BC77"),
        ],
        [plate_alert("x", "B840CK197")],
    )


def stored(data_dir: Path) -> tuple[list[str], list[tuple[str, str]]]:
    database = Database(default_url(data_dir))
    with database.connect() as connection:
        texts = sorted(connection.execute(select(sightings.c.text)).scalars())
        audited = [(row.user, row.action) for row in connection.execute(select(audit))]
    database.dispose()
    return texts, audited


def test_migrate_creates_the_schema_and_says_its_revision(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["store", "migrate", "--data-dir", str(tmp_path / "new")])
    assert result.exit_code == 0, result.output
    assert "schema at revision 0009" in result.output
    database = Database(default_url(tmp_path / "new"))
    with database.connect() as connection:
        assert connection.execute(select(func.count()).select_from(sightings)).scalar_one() == 0


def test_migrate_on_an_unreachable_database_exits_3_without_its_password() -> None:
    url = "postgresql://store:hunter2@127.0.0.1:1/history?connect_timeout=2"
    result = CliRunner().invoke(app, ["store", "migrate", "--database-url", url])
    assert result.exit_code == 3 and "hunter2" not in result.output


def test_forget_erases_the_plate_and_its_look_alikes_audited_as_cli(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["store", "forget", "b840ck197", "--yes", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    assert "erased 2 sightings, 1 pictures and 1 alerts" in result.output
    assert stored(data_dir) == (["A123BC77"], [("cli", "store.forget")])


def test_forget_asks_first_and_a_no_erases_nothing(data_dir: Path) -> None:
    result = CliRunner().invoke(
        app, ["store", "forget", "B840CK197", "--data-dir", str(data_dir)], input="n\n"
    )
    assert result.exit_code == 1
    assert stored(data_dir) == (["A123BC77", "B840CK197", "B840OK197"], [])


def test_forget_refuses_what_is_not_a_plate(data_dir: Path) -> None:
    result = CliRunner().invoke(app, ["store", "forget", "!!", "--yes", "--data-dir", str(data_dir)])
    assert result.exit_code == 2
    assert stored(data_dir)[0] == ["A123BC77", "B840CK197", "B840OK197"]
