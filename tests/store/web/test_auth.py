"""Access to the console: every route but /login, /static and /healthz refuses a request without
sign-in (the routes enumerated from the app, so a new one is covered); viewers read but never write;
a cookie-session write without its CSRF token is refused; API tokens; the first admin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Mount
from store_records import FAKE_JPEG, plate_alert, plate_sighting, sighting_id

from stream_worker.store.web.app import create_app
from stream_worker.store.web.auth import is_public
from stream_worker.store.web.users import UsersError, load_or_create, parse_users, verify_password

from .conftest import PASSWORDS, TOKENS, Console, csrf_of, make_console, signed_in

LOGIN_OR_PUBLIC = {"/login", "/healthz"}
BROWSER = {"accept": "text/html"}


def flat(routes: list, prefix: str = "") -> list[tuple[str, object]]:
    """(prefix, route) of every route, included routers opened (FastAPI includes them lazily)."""
    found: list[tuple[str, object]] = []
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            found += flat(included.routes, prefix + route.include_context.prefix)
        else:
            found.append((prefix, route))
    return found


def routes(app) -> list[tuple[str, str]]:
    """(method, concrete path) of every route the app serves, path parameters filled in."""
    found = []
    for prefix, route in flat(app.routes):
        if isinstance(route, Mount):
            found.append(("GET", prefix + route.path + "/console.css"))
        elif isinstance(route, APIRoute) or getattr(route, "methods", None):
            path = re.sub(r"\{[^}]+\}", "x1", prefix + route.path)
            found += [(method, path) for method in sorted(route.methods or ()) if method != "HEAD"]
        else:
            raise AssertionError(f"a route this test does not know how to reach: {route!r}")
    return found


def write_routes(app) -> list[tuple[str, str]]:
    return [(m, p) for m, p in routes(app) if m not in ("GET", "HEAD") and p not in ("/login", "/logout")]


@pytest.fixture
def stored(console: Console) -> Console:
    console.write(
        [plate_sighting("s1", "B840OK197", picture=FAKE_JPEG)],
        [plate_alert("a1", "B840OK197", sighting="s1")],
    )
    return console


def test_the_app_has_the_routes_this_test_expects(console: Console) -> None:
    paths = {path for _, path in routes(console.app)}
    assert {
        "/",
        "/search",
        "/visits",
        "/api/visits",
        "/api/visits/on-site",
        "/api/live",
        "/api/sightings",
        "/api/openapi.json",
        "/watchlist",
        "/cameras",
        "/notifications",
        "/api/notify/targets",
        "/api/camera-status",
    } <= paths
    assert len(write_routes(console.app)) >= 10


def test_every_route_refuses_without_sign_in(stored: Console) -> None:
    client = TestClient(stored.app, follow_redirects=False)
    refused = 0
    for method, path in routes(stored.app):
        if is_public(path):
            continue
        for headers in ({}, BROWSER, {"authorization": "Bearer wrong-token"}):
            answer = client.request(method, path, headers=headers)
            assert answer.status_code in (401, 303), (method, path, headers, answer.status_code)
            if answer.status_code == 303:
                assert answer.headers["location"].startswith("/login?next="), (method, path)
            assert b"B840OK197" not in answer.content and FAKE_JPEG not in answer.content
            refused += 1
    assert refused >= 3 * 20
    # The real identifiers do not help either.
    for path in (f"/api/sightings/{sighting_id('s1')}/picture", f"/sightings/{sighting_id('s1')}"):
        assert client.get(path).status_code in (401, 303)


def test_the_public_routes(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    for answer in (client.get("/login"), client.get("/api/me"), client.get("/")):
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert client.get("/healthz").text == "ok"
    assert client.get("/static/console.css").status_code == 200
    assert "Sign in" in client.get("/login").text


def test_a_wrong_password_or_user_is_refused_and_the_right_one_signs_in(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    for name, password in (("ada", "wrong"), ("nobody", PASSWORDS["ada"]), ("ada", "")):
        answer = client.post("/login", data={"username": name, "password": password, "csrf_token": token})
        assert answer.status_code in (401, 422)
    assert client.get("/api/me").status_code == 401
    answer = client.post(
        "/login",
        data={"username": "ada", "password": PASSWORDS["ada"], "csrf_token": token, "next": "/search"},
    )
    assert (answer.status_code, answer.headers["location"]) == (303, "/search")
    assert client.get("/api/me").json() == {"name": "ada", "role": "admin"}
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie


def test_guessing_is_stopped_for_that_user_from_that_client(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    limit = console.app.state.backend.sign_ins.PER_NAME
    for _ in range(limit):
        answer = client.post("/login", data={"username": "ada", "password": "guess", "csrf_token": token})
        assert answer.status_code == 401
    right = {"username": "ada", "password": PASSWORDS["ada"], "csrf_token": token}
    refused = client.post("/login", data=right)
    assert refused.status_code == 429 and "try again" in refused.text
    other = {"username": "vic", "password": PASSWORDS["vic"], "csrf_token": token}
    assert client.post("/login", data=other).status_code == 303  # another user is not locked out


def test_sign_in_redirects_only_inside_the_site(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        answer = client.post(
            "/login",
            data={"username": "ada", "password": PASSWORDS["ada"], "csrf_token": token, "next": target},
        )
        assert answer.headers["location"] == "/"
        token = csrf_of(client.get("/").text)


def test_secure_cookies_when_configured(tmp_path: Path, users_file: Path) -> None:
    made = make_console(tmp_path, users_file, secure_cookies=True)
    client = TestClient(made.app, base_url="https://console.test", follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    answer = client.post(
        "/login", data={"username": "vic", "password": PASSWORDS["vic"], "csrf_token": token}
    )
    assert "secure" in answer.headers["set-cookie"].lower()


def test_sign_in_and_out_need_the_csrf_token(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    client.get("/login")
    answer = client.post("/login", data={"username": "ada", "password": PASSWORDS["ada"]})
    assert answer.status_code == 403
    client, token = signed_in(console.app, "ada")
    assert client.post("/logout").status_code == 403
    assert client.get("/api/me").status_code == 200
    assert client.post("/logout", data={"csrf_token": token}).status_code == 303
    assert client.get("/api/me").status_code == 401


def test_every_write_without_the_csrf_token_is_refused(stored: Console) -> None:
    client, token = signed_in(stored.app, "ada")
    for method, path in write_routes(stored.app):
        for data in (None, {"csrf_token": "forged"}):
            answer = client.request(method, path, data=data)
            assert answer.status_code == 403, (method, path, answer.status_code, answer.text)
            assert "CSRF" in answer.json()["detail"]
        wrong = client.request(method, path, headers={"x-csrf-token": token + "x"})
        assert wrong.status_code == 403, (method, path)
    # Nothing changed: the alert is still to acknowledge, no audit row.
    assert client.get("/api/alerts", params={"acknowledged": "false"}).json()["items"]
    assert client.get("/api/audit").json() == []


def test_a_viewer_reads_but_every_write_is_403(stored: Console) -> None:
    client, token = signed_in(stored.app, "vic")
    assert client.get("/api/sightings", params={"text": "B840OK197"}).json()["items"]
    for method, path in write_routes(stored.app):
        answer = client.request(method, path, headers={"x-csrf-token": token}, json={})
        assert answer.status_code == 403, (method, path, answer.status_code)
    by_token = TestClient(stored.app, headers={"authorization": f"Bearer {TOKENS['vic']}"})
    for method, path in write_routes(stored.app):
        assert by_token.request(method, path, json={}).status_code == 403, (method, path)
    assert client.get("/api/audit").status_code == 403


def test_a_viewer_sees_no_write_buttons(stored: Console) -> None:
    client, _ = signed_in(stored.app, "vic")
    alerts = client.get("/alerts").text
    assert "B840OK197" in alerts and 'class="ack"' not in alerts and "/acknowledge" not in alerts
    assert "Audit" not in client.get("/").text
    admin, _ = signed_in(stored.app, "ada")
    assert 'class="ack"' in admin.get("/alerts").text


def test_the_api_by_bearer_token_needs_no_csrf(stored: Console) -> None:
    client = TestClient(stored.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    alert = client.get("/api/alerts").json()["items"][0]
    answer = client.post(f"/api/alerts/{alert['alert_id']}/acknowledge")
    assert answer.status_code == 200 and answer.json()["acknowledged_by"] == "ada"
    [audit] = client.get("/api/audit").json()
    assert (audit["user"], audit["action"], audit["detail"]) == (
        "ada",
        "alert.acknowledge",
        {"alert_id": alert["alert_id"]},
    )


def test_a_bad_token_is_refused_even_beside_a_good_cookie(console: Console) -> None:
    client, _ = signed_in(console.app, "ada")
    assert client.get("/api/me", headers={"authorization": "Bearer nope"}).status_code == 401
    assert client.get("/api/me", headers={"authorization": "Basic YWRhOmFkYQ=="}).status_code == 401


def test_the_openapi_schema_is_behind_sign_in_and_lists_the_api(console: Console) -> None:
    assert TestClient(console.app).get("/api/openapi.json").status_code == 401
    client = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['vic']}"})
    paths = client.get("/api/openapi.json").json()["paths"]
    assert {
        "/api/sightings",
        "/api/sightings/{sighting_id}/picture",
        "/api/alerts",
        "/api/watchlist",
        "/api/cameras/{camera_id}",
        "/api/live",
    } <= set(paths)
    assert not any(not path.startswith("/api/") for path in paths)


def test_without_a_users_file_an_admin_is_made_and_its_password_printed_once(
    tmp_path: Path, console: Console, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = console.settings.model_copy(update={"users_file": None, "data_dir": tmp_path / "data"})
    app = create_app(settings, console.database, {"bootstrap.servers": "127.0.0.1:9"})
    said = capsys.readouterr().out
    [password] = re.findall(r"with password (\S+)", said)
    assert "password" in said.lower() and len(password) >= 20
    create_app(settings, console.database, {"bootstrap.servers": "127.0.0.1:9"})
    assert password not in capsys.readouterr().out  # once
    stored = (tmp_path / "data" / "console-users.json").read_text()
    assert password not in stored and (tmp_path / "data" / "console-users.json").stat().st_mode & 0o077 == 0
    client = TestClient(app, follow_redirects=False)
    token = csrf_of(client.get("/login").text)
    client.post("/login", data={"username": "admin", "password": password, "csrf_token": token})
    assert client.get("/api/me").json() == {"name": "admin", "role": "admin"}


def test_load_or_create_keeps_the_first_admin(tmp_path: Path) -> None:
    _users, password = load_or_create(None, tmp_path)
    again, none = load_or_create(None, tmp_path)
    assert password and none is None
    assert verify_password(password, again.by_name["admin"].password_hash)
    assert not verify_password(password + "x", again.by_name["admin"].password_hash)


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"users": []},
        {"users": [{"name": "x", "role": "root", "password_hash": "scrypt$1$1$1$a$b"}]},
        {"users": [{"name": "x", "password_hash": "plain"}]},
        {"users": [{"name": "x", "password_hash": "scrypt$1$1$1$a$b", "password": "oops"}]},
        {
            "users": [
                {"name": "x", "password_hash": "scrypt$1$1$1$a$b"},
                {"name": "x", "password_hash": "scrypt$1$1$1$a$b"},
            ]
        },
    ],
)
def test_bad_users_files_are_refused(data: object) -> None:
    with pytest.raises(UsersError):
        parse_users(data, "users.yaml")


def test_a_malformed_hash_never_matches() -> None:
    for stored in ("", "scrypt$", "scrypt$x$8$1$AA==$AA==", "bcrypt$1$2$3$4$5", "scrypt$16384$8$1$!!$!!"):
        assert not verify_password("anything", stored)


def test_the_cookie_carries_only_a_random_id_and_the_database_only_its_hash(console: Console) -> None:
    import base64
    import json

    from sqlalchemy import select

    from stream_worker.store.schema import console_sessions
    from stream_worker.store.sessions import id_hash

    client, token = signed_in(console.app, "ada")
    payload = client.cookies["stream_worker_session"].split(".", 1)[0]
    cookie = json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    assert set(cookie) == {"sid"} and len(cookie["sid"]) >= 40 and "ada" not in cookie["sid"]
    with console.database.connect() as connection:
        rows = connection.execute(select(console_sessions)).all()
    assert [(row.id_hash, row.user) for row in rows] == [(id_hash(cookie["sid"]), "ada")]
    assert cookie["sid"] not in str(rows) and token not in str(rows)


def test_a_session_key_file_is_read_and_a_bad_one_refused(tmp_path: Path, users_file: Path) -> None:
    key = tmp_path / "session.key"
    for text in (None, "short"):
        if text is not None:
            key.write_text(text)
        with pytest.raises(UsersError) as refused:
            make_console(tmp_path, users_file, session_key_file=key)
        assert "session key" in str(refused.value) and (text is None or text not in str(refused.value))
    key.write_text("x" * 40 + "\n")
    made = make_console(tmp_path, users_file, session_key_file=key)
    client, _ = signed_in(made.app, "vic")
    assert client.get("/api/me").json()["name"] == "vic"
    assert not (tmp_path / "console-secret.key").exists()  # the data folder's key is not made
