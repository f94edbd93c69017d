"""The console under test: the real app over a real SQLite store in tmp_path, with two users from a
users file (an admin and a viewer, each with a password and an API token); `served`
(`serve_console`): the same console served by the store's own console thread on the real broker,
and `browser`: a headless Chromium for it."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from console_browser import chromium
from fastapi import FastAPI
from fastapi.testclient import TestClient
from service_processes import ServiceProcess
from store_records import plate_alert, plate_sighting

from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.sightings import PlateSighting
from stream_worker.contracts.visits import PlateVisit
from stream_worker.store.console_thread import ConsoleThread, start_console
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

    def close(self) -> None:
        """Stop following the topics (started by the first page that needed them), drop the store."""
        self.app.state.backend.close()
        self.database.dispose()

    def write(
        self,
        sightings: Sequence[PlateSighting] = (),
        alerts: Sequence[PlateAlert] = (),
        visits: Sequence[PlateVisit] = (),
    ) -> None:
        with self.database.begin() as connection:
            write_batch(connection, list(sightings), list(alerts), batch_visits=list(visits))


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
    made.close()


CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token in the page"
    return found.group(1)


def topics_of(unique_name: str) -> dict[str, str]:
    """The console's topics, each its test's own."""
    return {
        "watchlist_topic": f"{unique_name}-wl",
        "cameras_topic": f"{unique_name}-cam",
        "camera_status_topic": f"{unique_name}-status",
        "notify_targets_topic": f"{unique_name}-targets",
        "notify_tests_topic": f"{unique_name}-tests",
        "notify_deliveries_topic": f"{unique_name}-deliveries",
        "notify_status_topic": f"{unique_name}-notify-status",
        "corrections_topic": f"{unique_name}-corrections",
    }


@contextlib.contextmanager
def serve_console(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> Iterator[tuple[Console, str]]:
    """The console on the real broker, served over HTTP by the store's console thread, and its
    address (http://host:port)."""
    console = make_console(
        tmp_path,
        users_file,
        kafka_bootstrap,
        **topics_of(unique_name),
    )
    thread: ConsoleThread | None = start_console(console.settings, console.database)
    assert thread is not None
    yield console, thread.address.rstrip("/")
    thread.stop()
    console.database.dispose()


@pytest.fixture
def served(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> Iterator[tuple[Console, str]]:
    with serve_console(tmp_path, users_file, kafka_bootstrap, unique_name) as console_and_address:
        yield console_and_address


@pytest.fixture
def browser() -> Iterator[object]:
    with chromium() as driver:
        yield driver


def signed_in(app: FastAPI | str, name: str) -> tuple[httpx.Client, str]:
    """A client signed in as `name` through the sign-in form, and its session's CSRF token: of the
    app in process, or of the console served at the address `app` (http://host:port)."""
    if isinstance(app, str):
        client: httpx.Client = httpx.Client(base_url=app, follow_redirects=False, timeout=30.0)
    else:
        client = TestClient(app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    answer = client.post("/login", data={"username": name, "password": PASSWORDS[name], "csrf_token": token})
    assert answer.status_code == 303, answer.text
    return client, csrf_of(client.get("/").text)


def stored_raw(
    console: Console, sightings: Sequence[dict[str, Any]] = (), alerts: Sequence[dict[str, Any]] = ()
) -> None:
    """Rows put straight into the store's tables, past the contracts (what a record the contracts
    would refuse looks like if it got in anyway): each dict overrides the columns of a valid row
    (`name` names the valid record it starts from), and the `record` copy of those fields."""
    from sqlalchemy import insert

    from stream_worker.store.report_counts import rebuild
    from stream_worker.store.schema import alerts as alerts_table
    from stream_worker.store.schema import sightings as sightings_table
    from stream_worker.store.writer import alert_row, sighting_row

    now = datetime.now(UTC)

    def row(base: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        record = {**base["record"], **{k: v for k, v in fields.items() if k in base["record"]}}
        return {**base, **fields, "record": record}

    sighting_rows = [
        row(sighting_row(plate_sighting(f["name"], "B840OK197", last_seen=now), None, now), _fields(f))
        for f in sightings
    ]
    alert_rows = [
        row(alert_row(plate_alert(f["name"], "B840CK197", "B840OK197", alerted_at=now), now), _fields(f))
        for f in alerts
    ]
    with console.database.begin() as connection:
        if sighting_rows:
            connection.execute(insert(sightings_table), sighting_rows)
            rebuild(connection)  # the reports' counts, which the writer keeps, of these too
        if alert_rows:
            connection.execute(insert(alerts_table), alert_rows)


def _fields(given: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in given.items() if k != "name"}


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
        "--visits-topic", f"{name}-visits",
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
