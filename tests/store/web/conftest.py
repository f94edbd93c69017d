"""The console under test: the real app over a real SQLite store in tmp_path, with two users from a
users file (an admin and a viewer, each with a password and an API token)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from service_processes import ServiceProcess

from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.sightings import PlateSighting
from stream_worker.store.database import Database, default_url
from stream_worker.store.settings import StoreSettings
from stream_worker.store.web.app import create_app
from stream_worker.store.web.users import hash_password, hash_token
from stream_worker.store.writer import write_batch

CLOSED_BROKER = "127.0.0.1:9"  # nothing listens there
PASSWORDS = {"ada": "ada's long passphrase", "vic": "vic's long passphrase"}
TOKENS = {"ada": "token-of-ada-0123456789abcdefghij", "vic": "token-of-vic-0123456789abcdefghij"}


@dataclass
class Console:
    app: FastAPI
    database: Database
    settings: StoreSettings

    def write(self, sightings: Sequence[PlateSighting] = (), alerts: Sequence[PlateAlert] = ()) -> None:
        with self.database.begin() as connection:
            write_batch(connection, list(sightings), list(alerts))


def write_users(path: Path) -> Path:
    users = [
        {
            "name": "ada",
            "role": "admin",
            "password_hash": hash_password(PASSWORDS["ada"]),
            "token_hashes": [hash_token(TOKENS["ada"])],
        },
        {
            "name": "vic",
            "role": "viewer",
            "password_hash": hash_password(PASSWORDS["vic"]),
            "token_hashes": [hash_token(TOKENS["vic"])],
        },
    ]
    path.write_text(json.dumps({"users": users}))
    return path


@pytest.fixture(scope="session")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_users(tmp_path_factory.mktemp("users") / "users.json")


def make_console(
    tmp_path: Path, users_file: Path, bootstrap_servers: str = CLOSED_BROKER, **fields
) -> Console:
    settings = StoreSettings(
        data_dir=tmp_path,
        users_file=users_file,
        bootstrap_servers=bootstrap_servers,
        console_port=0,
        **fields,
    )
    database = Database(default_url(tmp_path))
    database.migrate()
    app = create_app(settings, database, {"bootstrap.servers": bootstrap_servers})
    app.state.backend.timeout_s = 2.0
    return Console(app, database, settings)


@pytest.fixture
def console(tmp_path: Path, users_file: Path) -> Iterator[Console]:
    made = make_console(tmp_path, users_file)
    yield made
    made.database.dispose()


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token in the page"
    return found.group(1)


def signed_in(app: FastAPI, name: str) -> tuple[TestClient, str]:
    """A client signed in as `name` through the sign-in form, and its session's CSRF token."""
    client = TestClient(app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    answer = client.post("/login", data={"username": name, "password": PASSWORDS[name], "csrf_token": token})
    assert answer.status_code == 303, answer.text
    return client, csrf_of(client.get("/").text)


def start_store(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, name: str, *args: str
) -> tuple[ServiceProcess, str]:
    """A running `stream-worker store` process with its console on a free port (its data in
    tmp_path/data unless `args` say otherwise), and the console's address without the final /."""
    args = (
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", f"{name}-store",
        "--sightings-topic", f"{name}-sightings",
        "--alerts-topic", f"{name}-alerts",
        "--users-file", str(users_file),
        "--console-port", "0",
        "--metrics-port", "0",
        "--session-timeout-ms", "6000",
        *(() if "--data-dir" in args else ("--data-dir", str(tmp_path / "data"))),
        *args,
    )  # fmt: skip
    log = tmp_path / f"store-{len(list(tmp_path.glob('store-*.log')))}.log"
    store = ServiceProcess(list(args), log, command="store", started="store started").start()
    started = store.wait_for_log(lambda line: line.get("msg") == "store started", "start")
    return store, started["console"].rstrip("/")
