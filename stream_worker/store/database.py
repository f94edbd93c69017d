"""The history store's database: SQLite (the embedded default, a file in the data directory) or
PostgreSQL (production), behind one SQLAlchemy engine, its schema brought up to date by Alembic.

SQLite runs in WAL mode with a busy timeout, so that the console reads while the writer writes,
and with foreign keys on (pictures go with their sighting). Its file holds plates, pictures and
sessions: it is made 0600 (an older one tightened to it), as the users file is; SQLite gives its
-wal and -shm files the database file's mode. The URL's password never reaches a log
line or an error: `safe_url` is what is said.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 10_000


class DatabaseError(RuntimeError):
    """The database could not be opened, reached or migrated (the message names it safely)."""


def default_url(data_dir: Path) -> str:
    return f"sqlite:///{(data_dir / 'history.db').resolve()}"


def safe_url(url: str | URL) -> str:
    """The URL without its password, for logs and errors."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<an unreadable database URL>"


def _parse(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(
            "the database URL is not one SQLAlchemy reads (sqlite:///... or postgresql://...)"
        ) from None
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in ("", "psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # the driver the store installs
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise DatabaseError(f"{safe_url(parsed)}: the store runs on SQLite or PostgreSQL")
    return parsed


def _private(path: Path) -> None:
    """The database file (created empty if missing: SQLite takes an empty file as a new database)
    and any -wal or -shm beside it readable by this user only."""
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        for each in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if each.exists() and each.stat().st_mode & 0o077:
                each.chmod(0o600)
    except OSError as error:  # not this user's file, or read-only: SQLite says what it can do
        log.warning("the database file's mode is not changed", extra={"path": str(path), "error": str(error)})


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # durable at each checkpoint; WAL keeps it consistent
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Database:
    """One engine per process; `begin()` for a transaction, `connect()` for reads."""

    def __init__(self, url: str) -> None:
        self.url = _parse(url)
        self.dialect = self.url.get_backend_name()
        options: dict[str, Any] = {"future": True}
        if self.dialect == "sqlite":
            database = self.url.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
                _private(Path(database))
        else:
            options.update(pool_pre_ping=True, pool_size=5, max_overflow=5)
        self.engine: Engine = create_engine(self.url, **options)
        if self.dialect == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)

    @property
    def safe_url(self) -> str:
        return safe_url(self.url)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self.engine.connect() as connection:
            yield connection

    def migrate(self) -> str:
        """Bring the schema to the newest revision (Alembic `upgrade head`); returns it."""
        from alembic import command
        from alembic.config import Config
        from alembic.runtime.migration import MigrationContext

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        try:
            with self.engine.begin() as connection:
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
            with self.engine.connect() as connection:
                revision = MigrationContext.configure(connection).get_current_revision()
        except SQLAlchemyError as error:
            raise DatabaseError(f"{self.safe_url}: migrating the schema failed: {_reason(error)}") from None
        log.info("store schema at %s on %s", revision, self.safe_url)
        return revision or ""

    def check(self) -> None:
        """Raise DatabaseError unless the database answers (readiness)."""
        try:
            with self.engine.connect() as connection:
                connection.exec_driver_sql("SELECT 1")
        except SQLAlchemyError as error:
            raise DatabaseError(f"{self.safe_url}: {_reason(error)}") from None

    def dispose(self) -> None:
        self.engine.dispose()


def _reason(error: SQLAlchemyError) -> str:
    """The driver's first line, without the statement and parameters SQLAlchemy appends."""
    original = getattr(error, "orig", None) or error
    return str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
