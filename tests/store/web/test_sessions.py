"""Against real `stream-worker store` processes over HTTP: a session is a row in
the store's database, so sign-out, an admin's "sign out everywhere" (API and command line) and the
idle and absolute lifetimes end it, the old cookie with its CSRF token gets nothing, and a second
store on the same database (SQLite file or PostgreSQL) shares the sessions."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stream_worker.store.web.users import hash_password

from .conftest import PASSWORDS, csrf_of, start_store

pytestmark = pytest.mark.integration

ENTRY = {"plate": "A123BC77", "list": "stolen"}


def sign_in(address: str, name: str) -> tuple[httpx.Client, str]:
    """A client signed in as `name` through the sign-in form, and its session's CSRF token."""
    client = httpx.Client(base_url=address, follow_redirects=False, timeout=30)
    token = csrf_of(client.get("/login").text)
    answer = client.post("/login", data={"username": name, "password": PASSWORDS[name], "csrf_token": token})
    assert answer.status_code == 303, answer.text
    return client, csrf_of(client.get("/").text)


def copy_of(client: httpx.Client, address: str) -> httpx.Client:
    """Another client holding the same cookie (a stolen or kept copy, or another replica's)."""
    return httpx.Client(base_url=address, cookies=dict(client.cookies), follow_redirects=False, timeout=30)


def refused(client: httpx.Client, token: str) -> bool:
    """Whether the cookie reads nothing and writes nothing, even with its CSRF token."""
    me = client.get("/api/me")
    page = client.get("/", headers={"accept": "text/html"})
    write = client.post("/api/watchlist", json=ENTRY, headers={"x-csrf-token": token})
    return (
        me.status_code == 401
        and page.status_code == 303
        and page.headers["location"].startswith("/login")
        and write.status_code in (401, 403)
    )


@pytest.fixture
def store(tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str) -> Iterator[str]:
    process, address = start_store(tmp_path, users_file, kafka_bootstrap, unique_name)
    yield address
    process.stop(signal.SIGTERM)


def test_sign_out_ends_the_session_for_every_copy_of_its_cookie(store: str) -> None:
    client, token = sign_in(store, "ada")
    kept = copy_of(client, store)
    assert kept.get("/api/me").json() == {"name": "ada", "role": "admin"}
    with copy_of(client, store).stream("GET", "/api/live") as feed:
        chunks = feed.iter_raw()
        assert next(chunks).startswith(b"retry:")
        assert client.post("/logout", data={"csrf_token": token}).status_code == 303
        assert refused(kept, token)
        assert refused(client, token)
        signed_out = time.monotonic()
        for _ in chunks:  # the open live feed ends too
            assert time.monotonic() - signed_out < 20, "the live feed outlived the session"


def test_an_admin_signs_a_user_and_everyone_out_everywhere(store: str, tmp_path: Path) -> None:
    vic_here, vic_token = sign_in(store, "vic")
    vic_there, _ = sign_in(store, "vic")
    ada, ada_token = sign_in(store, "ada")
    other_ada, other_token = sign_in(store, "ada")
    # A viewer cannot; an admin can, with the CSRF token.
    assert (
        vic_here.post(
            "/api/sessions/revoke", json={"all": True}, headers={"x-csrf-token": vic_token}
        ).status_code
        == 403
    )
    assert ada.post("/api/sessions/revoke", json={"user": "vic"}).status_code == 403
    answer = ada.post("/api/sessions/revoke", json={"user": "vic"}, headers={"x-csrf-token": ada_token})
    assert answer.status_code == 200 and answer.json()["changed"] == 2
    assert refused(vic_here, vic_token) and refused(vic_there, vic_token)
    assert other_ada.get("/api/me").status_code == 200
    # The console's button: everyone but the admin who pressed it.
    answer = ada.post("/sessions/revoke", data={"csrf_token": ada_token, "user": ""})
    assert answer.status_code == 303
    assert refused(other_ada, other_token)
    assert ada.get("/api/me").status_code == 200
    actions = [(row["action"], row["detail"]["user"]) for row in ada.get("/api/audit").json()]
    assert ("sessions.revoke", "vic") in actions and ("sessions.revoke", None) in actions
    # And from the command line, on the store's database.
    revoked = subprocess.run(
        [sys.executable, "-m", "stream_worker", "store", "sessions", "revoke", "--user", "ada",
         "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    assert refused(ada, ada_token)


def test_a_new_password_ends_the_sessions_signed_in_with_the_old_one(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    users = tmp_path / "users.json"
    users.write_text(users_file.read_text())
    process, address = start_store(tmp_path, users, kafka_bootstrap, unique_name)
    ada, ada_token = sign_in(address, "ada")
    vic, _ = sign_in(address, "vic")
    process.stop(signal.SIGTERM)
    # The users file changes (a Secret updated, the store restarted): ada has a new password.
    document = json.loads(users.read_text())
    document["users"][0]["password_hash"] = hash_password("ada's new passphrase")
    users.write_text(json.dumps(document))
    process, address = start_store(tmp_path, users, kafka_bootstrap, unique_name)
    try:
        assert refused(copy_of(ada, address), ada_token)
        assert copy_of(vic, address).get("/api/me").status_code == 200
    finally:
        process.stop(signal.SIGTERM)


def test_sessions_end_when_idle_and_at_their_absolute_lifetime(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    idle_s, lifetime_s = 4.0, 10.0
    process, address = start_store(
        tmp_path, users_file, kafka_bootstrap, unique_name,
        "--session-idle-s", str(idle_s), "--session-lifetime-s", str(lifetime_s),
    )  # fmt: skip
    try:
        busy, token = sign_in(address, "ada")
        signed_in_at = time.monotonic()
        idle, idle_token = sign_in(address, "vic")
        # Busy: a request every half second outlives the idle lifetime...
        while time.monotonic() - signed_in_at < lifetime_s - 2:
            assert busy.get("/api/me").status_code == 200, time.monotonic() - signed_in_at
            time.sleep(0.5)
        # ...while the one left alone has ended.
        assert refused(idle, idle_token)
        # The busy one ends at its absolute lifetime all the same.
        while time.monotonic() - signed_in_at < lifetime_s + 1:
            busy.get("/api/me")
            time.sleep(0.5)
        assert refused(busy, token)
    finally:
        process.stop(signal.SIGTERM)


def test_a_second_store_on_the_same_sqlite_file_shares_the_sessions(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    first, first_address = start_store(tmp_path, users_file, kafka_bootstrap, unique_name)
    second, second_address = start_store(tmp_path, users_file, kafka_bootstrap, unique_name)
    try:
        client, token = sign_in(first_address, "ada")
        there = copy_of(client, second_address)
        assert there.get("/api/me").json() == {"name": "ada", "role": "admin"}
        assert there.post("/logout", data={"csrf_token": token}).status_code == 303  # there
        assert refused(client, token)  # and here
    finally:
        first.stop(signal.SIGTERM)
        second.stop(signal.SIGTERM)


def test_replicas_on_postgresql_with_one_session_key_share_the_sessions(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str, postgres_url: str
) -> None:
    key_file = tmp_path / "session.key"
    key_file.write_text("k" * 48)
    for name in "ab":
        (tmp_path / name).mkdir()
    args = ("--database-url", postgres_url, "--session-key-file", str(key_file))
    replicas = [
        start_store(tmp_path / name, users_file, kafka_bootstrap, unique_name, *args) for name in "ab"
    ]
    try:
        (_, first), (_, second) = replicas
        client, token = sign_in(first, "vic")
        there = copy_of(client, second)
        assert there.get("/api/me").json() == {"name": "vic", "role": "viewer"}
        admin, admin_token = sign_in(second, "ada")
        answer = admin.post("/api/sessions/revoke", json={"all": True}, headers={"x-csrf-token": admin_token})
        assert answer.json()["changed"] == 1
        assert refused(client, token) and refused(there, token)
    finally:
        for process, _ in replicas:
            process.stop(signal.SIGTERM)
