"""The store's tests: `database`, a migrated store on SQLite and, as an integration test, on a real
PostgreSQL (tests/postgres.py), for the tests that must hold on both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stream_worker.store.database import Database

SQLITE_AND_POSTGRES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)]


@pytest.fixture(params=SQLITE_AND_POSTGRES)
def database(request: pytest.FixtureRequest, tmp_path) -> Iterator[Database]:
    url = (
        f"sqlite:///{tmp_path}/history.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    store = Database(url)
    store.migrate()
    try:
        yield store
    finally:
        store.dispose()
