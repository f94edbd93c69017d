"""A real PostgreSQL for the history store's tests: Debian's postgresql-15 binaries
(scripts/test-servers.sh installs them) started as a local server in a temporary directory, or the server
`STORE_DATABASE_URL` names. Each test that asks gets a fresh database on it (`postgres_url`).

initdb refuses to run as root, so as root the server runs as the `postgres` user the Debian
package creates. It listens on a free TCP port of 127.0.0.1 only, with trust authentication for
that address (a throwaway server that lives as long as the test session).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stream_worker.launchers.ports import free_port

BIN = Path("/usr/lib/postgresql/15/bin")
START_TIMEOUT_S = 60


def _as_owner(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server's `postgres` database (no database name: see postgres_url)."""
    if url := os.environ.get("STORE_DATABASE_URL"):
        yield url
        return
    if not (BIN / "initdb").is_file():
        pytest.fail("PostgreSQL 15 is missing: run scripts/test-servers.sh (as root)")
    root = Path(tempfile.mkdtemp(prefix="stream-worker-postgres-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    subprocess.run(
        _as_owner([str(BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    log = root / "server.log"
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_owner([str(BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]),
        check=True,
        capture_output=True,
        timeout=START_TIMEOUT_S,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_owner([str(BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            timeout=START_TIMEOUT_S,
        )
        shutil.rmtree(root, ignore_errors=True)


def create_database(server_url: str) -> str:
    """A new, empty database on the server; its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    name = f"store_{uuid.uuid4().hex[:12]}"
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    deadline = time.monotonic() + 10
    while True:
        try:
            with psycopg.connect(conninfo, autocommit=True) as connection:
                connection.execute(f'CREATE DATABASE "{name}"')
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return url.set(database=name).render_as_string(hide_password=False)


@pytest.fixture()
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database of the session's PostgreSQL server."""
    return create_database(postgres_server)
