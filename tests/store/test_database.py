"""The store's database: migrations bring an empty SQLite database to the schema the code uses,
and a second run changes nothing; URLs never show their password; the SQLite files are 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from stream_worker.store.database import Database, DatabaseError, default_url, safe_url
from stream_worker.store.schema import metadata


def test_migrations_make_exactly_the_schema_of_the_code(tmp_path: Path) -> None:
    database = Database(default_url(tmp_path))
    assert database.migrate() == "0009"
    assert database.migrate() == "0009"  # nothing to do the second time
    with database.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        tables = set(inspect(connection).get_table_names())
    assert {"sightings", "pictures", "plate_variants", "alerts", "audit"} <= tables
    assert (tmp_path / "history.db").is_file()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    database = Database(default_url(tmp_path))
    with database.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_the_sqlite_files_are_readable_by_their_user_only(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    for name in ("history.db", "history.db-wal"):  # as an older version left them: 0644
        (old / name).touch(0o644)
        (old / name).chmod(0o644)
    previous = os.umask(0o022)
    try:
        for folder in (tmp_path / "new", old):
            database = Database(default_url(folder))
            database.migrate()
            with database.begin() as connection:
                connection.execute(text("CREATE TABLE IF NOT EXISTS probe (x INTEGER)"))
            with database.connect() as connection:  # a reader keeps the -wal and -shm in place
                connection.execute(text("SELECT 1")).all()
                modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.glob("history.db*")}
            database.dispose()
            assert set(modes) == {"history.db", "history.db-wal", "history.db-shm"}, modes
            assert set(modes.values()) == {0o600}, (folder.name, modes)
    finally:
        os.umask(previous)


def test_a_password_never_shows_in_the_url_said() -> None:
    said = safe_url("postgresql://store:hunter2@db:5432/history")
    assert "hunter2" not in said and "***" in said
    assert "hunter2" not in Database("postgresql://store:hunter2@db/history").safe_url


@pytest.mark.parametrize("url", ["mysql://u:p@h/d", "not a url at all"])
def test_other_databases_are_refused_clearly(url: str) -> None:
    with pytest.raises(DatabaseError) as refused:
        Database(url)
    assert "p@h" not in str(refused.value)


def test_an_unreachable_database_is_a_clear_error_without_its_password() -> None:
    database = Database("postgresql://store:hunter2@127.0.0.1:1/history?connect_timeout=2")
    with pytest.raises(DatabaseError) as failed:
        database.check()
    assert "hunter2" not in str(failed.value) and "127.0.0.1" in str(failed.value)


@pytest.mark.integration
def test_migrations_on_a_real_postgresql(postgres_url: str) -> None:
    database = Database(postgres_url)
    assert database.migrate() == "0009"
    assert database.migrate() == "0009"
    with database.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    database.check()
    database.dispose()
