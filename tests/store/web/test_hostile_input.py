"""The hostile-input suite: every free-text field the console shows (sightings,
alerts, watch-list entries, camera settings and live states, notification targets and the delivery
log, the audit) and every id, fed the issue's strings
(HTML, template syntax, `../`, `?`, `#`, a right-to-left override, NUL, 10,000 characters) three
ways: straight into the store's database (past the contracts: defence in depth), through the API
and the forms, and as records on the topics a real `stream-worker store` process reads. Whatever
got in is rendered escaped, every id in a link or a form stays one path segment, no script runs
in Chromium (nor is any blocked by the Content-Security-Policy: nothing inline was made), nothing
answers 5xx, no write lands anywhere but where it was aimed, and the store keeps storing. The
checks over HTTP are tests of their own, apart from those in Chromium, so that they run wherever a
browser is missing (under CI a missing browser fails). The watch list's CSV export writes no cell a
spreadsheet would run. Bodies larger than their route takes are refused (413) on every route
before they are read."""

from __future__ import annotations

import csv
import io
import re
import select
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import console_browser
import httpx
import orjson
import pytest
from confluent_kafka import Producer
from console_browser import wait
from fastapi.routing import APIRoute
from markupsafe import escape
from service_processes import ServiceProcess
from sqlalchemy import insert
from starlette.routing import Mount
from store_records import plate_alert, plate_sighting, sighting_id
from typer.testing import CliRunner

from stream_worker import cli
from stream_worker.cameras.status import CameraStatus
from stream_worker.cameras.store import read_cameras, write_settings
from stream_worker.contracts.cameras import parse_settings
from stream_worker.contracts.notify import DeliveryOutcome, NotifyDelivery, decode_record
from stream_worker.launchers.broker import create_topics
from stream_worker.service.compacted import read_compacted, write_compacted
from stream_worker.store import queries
from stream_worker.store.console_thread import start_console
from stream_worker.store.schema import visits
from stream_worker.store.web.bodies import (
    BODY_LIMIT,
    IMPORT_BODY_LIMIT,
    LARGER_BODIES,
    NO_BODY_METHODS,
    route_limits,
)
from stream_worker.store.web.paths import segment

from .conftest import PASSWORDS, TOKENS, Console, make_console, serve_console, signed_in, stored_raw

pytestmark = pytest.mark.integration

HOSTILE = {
    "html": '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">',
    "attribute": '"><svg onload="window.__pwned=1"><a title=\'',
    "template": "{{7*7}}{% if 1 %}evaluated{% endif %}${7*7}",
    "traversal": "../cameras/gate-1/remove?",
    "dots": "..",
    "query": "?show=all&cursor=x",
    "fragment": "#main",
    "rtl": "gate\u202e1-etag",
    "nul": "nul\x00byte",
    "long": "W" * 10_000,
}
# What would be markup (or a template evaluated) in a page, were a value not escaped.
UNESCAPED = ("<script>window.__pwned", "<img src=x", "<svg onload", "49evaluated")
# The only shapes a same-site URL in a page may have: every id one segment (no raw /, ?, #).
ROUTES = re.compile(
    r"/|/(search|visits|alerts|watchlist|cameras|audit|login|logout|reports)|/reports/[a-z-]+\.(csv|jsonl)"
    r"|/static/[a-z]+\.(js|css)|/watchlist/(add|remove|import)|/sessions/revoke"
    r"|/notifications|/notifications/targets|/notifications/targets/[^/?#]+/(remove|test)"
    r"|/sightings/[^/?#]+(/review)?|/api/sightings/[^/?#]+/picture|/alerts/[^/?#]+/acknowledge"
    r"|/cameras/[^/?#]+(/remove)?|/api/cameras/[^/?#]+/frame"
)
URLS = re.compile(r"""\s(?:href|src|action|data-frame)="([^"]*)\"""")
SINCE = "2000-01-01T00:00:00"
VIOLATIONS = """window.__violations = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective));"""
GATE = parse_settings({"display_name": "Gate 1", "masks": [[[0, 0], [0.5, 0], [0.5, 0.5]]]})


def _assert_safe_page(url: str, answer: httpx.Response) -> None:
    """No 5xx; an HTML page shows every value escaped and links only to whole routes."""
    assert answer.status_code < 500, (url, answer.status_code, answer.text[:300])
    if not answer.headers.get("content-type", "").startswith("text/html"):
        return
    for marker in UNESCAPED:
        assert marker not in answer.text, (url, marker)
    for raw in URLS.findall(answer.text):
        link = unescape(raw)
        if not link.startswith("/"):
            continue
        path = urlsplit(link).path
        assert ROUTES.fullmatch(path), (url, link)
        # What the browser asks for is what the page says: no dot segment walks elsewhere.
        assert urlsplit(urljoin(url, link)).path == path, (url, link)


def _get_all(client: httpx.Client, paths: list[str]) -> None:
    for path in paths:
        for accept in ("text/html", "application/json"):
            answer = client.get(path, headers={"accept": accept})
            _assert_safe_page(str(answer.request.url), answer)


def _audit_actions(console: Console) -> list[str]:
    with console.database.connect() as connection:
        return [row.action for row in queries.audit(connection, 200)]


def _browse(driver: Any, address: str, paths: list[str]) -> None:
    """Each page in Chromium: no hostile markup became elements, no script ran, no CSP report."""
    from selenium.webdriver.common.by import By

    for path in paths:
        driver.get(address + path)
        wait(driver, lambda d: d.find_elements(By.TAG_NAME, "main"))
        found = driver.execute_script(
            """return [window.__pwned, window.__violations,
                       document.querySelectorAll('img[src="x"], svg[onload], main script').length]"""
        )
        assert found == [None, [], 0], (path, found)


def _sign_in(driver: Any, address: str) -> None:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": VIOLATIONS})
    console_browser.sign_in(driver, address, "ada", PASSWORDS["ada"])


# --- straight into the database -----------------------------------------------------------------
LISTS = [
    "/",
    "/search?since=" + SINCE,
    "/visits?since=" + SINCE,
    "/alerts?show=all",
    "/cameras",
    "/audit",
    "/notifications",
]


def _hostile_rows(console: Console, kafka_bootstrap: str) -> None:
    """Hostile sightings, alerts and audit rows in the database, and on the console's topics."""
    write_settings(kafka_bootstrap, "gate-1", GATE, console.settings.cameras_topic)
    stored_raw(
        console,
        sightings=[
            {
                "name": f"hostile-{key}",
                "sighting_id": value,
                "camera_id": value,
                "text": value,
                "zone": value,
                "direction": value[:16],
                "candidates": [{"text": value, "score": 0.5}],
                "has_picture": True,
            }
            for key, value in HOSTILE.items()
        ],
        alerts=[
            {
                "name": f"hostile-{key}",
                "alert_id": value,
                "sighting_id": value,
                "camera_id": value,
                "list": value,
                "label": value,
                "plate": value,
                "candidate": value,
            }
            for key, value in HOSTILE.items()
        ],
    )
    with console.database.begin() as connection:
        for key, value in HOSTILE.items():
            queries.add_audit(connection, value, f"hostile.{key}", {"value": value})
        connection.execute(
            insert(visits),
            [
                _hostile_visit(key, value, closed)
                for key, value in HOSTILE.items()
                for closed in (False, True)
            ],
        )
    _hostile_console_topics(console, kafka_bootstrap)


def _hostile_visit(key: str, value: str, closed: bool) -> dict[str, Any]:
    """A visit row holding `value` in every text column, past the contracts: on site, or closed."""
    entered = datetime.now(UTC) - timedelta(hours=1)
    text = {name: value for name in ("site", "plate", "text_key", "entry_camera_id", "entry_sighting_id")}
    row: dict[str, Any] = {**text, "visit_id": f"{value}-{closed}", "entered_at": entered}
    if closed:
        row.update(
            closed_at=entered + timedelta(minutes=30), dwell_s=1800.0, ended_by=value[:16],
            exit_camera_id=value, exit_sighting_id=value, exit_text=value, exited_at=entered,
        )  # fmt: skip
    return row


def test_hostile_rows_in_the_database_render_escaped_and_redirect_no_write(
    served, kafka_bootstrap: str
) -> None:
    console, address = served
    _hostile_rows(console, kafka_bootstrap)
    client, token = signed_in(address, "ada")
    per_id = [
        f"{prefix}{segment(value)}{suffix}"
        for value in HOSTILE.values()
        for prefix, suffix in (
            ("/sightings/", ""),
            ("/api/sightings/", ""),
            ("/api/sightings/", "/picture"),
            ("/cameras/", ""),
            ("/api/cameras/", "/frame"),
        )
    ]

    def shown() -> str:
        return client.get("/cameras").text + client.get("/notifications").text

    # The console follows its topics: the hostile records are on its pages within seconds.
    deadline = time.monotonic() + 30
    while shown().count("{{7*7}}") < 4 or "W" * 1000 not in shown():
        assert time.monotonic() < deadline, "the hostile topic records never reached the pages"
        time.sleep(0.5)
    _get_all(client, LISTS + per_id + ["/notifications?edit=t-html", "/api/camera-status"])
    assert shown().count("{{7*7}}") >= 4 and "W" * 1000 in shown()  # shown (escaped), not evaluated
    alerts = client.get("/alerts?show=all").text
    assert alerts.count("{{7*7}}") >= 4  # list, label, plate, candidate: shown, not evaluated
    assert "W" * 10_000 in alerts and "gate\u202e1-etag" in alerts
    assert '"/sightings/%2F.."' in alerts and "/sightings/..%2Fcameras%2Fgate-1%2Fremove%3F" in alerts
    # Every button the alerts page offers, pressed as a browser would resolve its form's URL.
    before = _audit_actions(console)
    page_url = address + "/alerts?show=all"
    actions = [unescape(a) for a in re.findall(r'<form method="post" action="([^"]*)"', alerts)]
    assert len(actions) == len(HOSTILE) + 1  # each alert's Acknowledge, and Sign out
    for action in actions:
        if action == "/logout":
            continue
        answer = client.post(urljoin(page_url, action), data={"csrf_token": token})
        assert answer.status_code in (303, 404), (action, answer.status_code, answer.text[:300])
    after = _audit_actions(console)  # newest first
    new = after[: len(after) - len(before)]
    assert set(new) <= {"alert.acknowledge"}, new
    assert read_cameras(kafka_bootstrap, console.settings.cameras_topic).values == {"gate-1": GATE}


def test_hostile_rows_in_the_database_run_no_script_in_chromium(
    served, browser, kafka_bootstrap: str
) -> None:
    console, address = served
    _hostile_rows(console, kafka_bootstrap)
    _sign_in(browser, address)
    from selenium.webdriver.common.by import By

    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live-sightings li")) == len(HOSTILE))
    _browse(browser, address, [*LISTS[1:], "/notifications?edit=t-html"])
    _browse(browser, address, [f"/sightings/{segment(HOSTILE[k])}" for k in ("html", "attribute", "rtl")])


def _hostile_console_topics(console: Console, kafka_bootstrap: str) -> None:
    """Hostile camera states, notification targets (names the contract refuses, skipped; valid
    ones with hostile lists) and delivery-log lines on the console's topics."""
    now = time.time()
    statuses, targets = [], []
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, value in HOSTILE.items():
        status = CameraStatus(
            camera_id=value, state=value, state_since=now, last_error=value, source=value, replica=value,
            updated_at=now, decoded_fps=1.0, published_fps=1.0, frames_decoded=1, frames_published=1,
            frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=0, motion_share=None,
            last_frame_at=None,
        )  # fmt: skip
        statuses.append((value.encode(), status.to_json()))
        target = {"type": "webhook", "url": "https://hooks.example.com/x", "rules": {"lists": [value]}}
        targets += [(value.encode(), orjson.dumps(target)), (f"t-{key}".encode(), orjson.dumps(target))]
        line = NotifyDelivery(
            target=value[:64], event_id=value[:256], kind=value[:32], outcome=DeliveryOutcome.FAILED,
            attempts=1, status=500, error=value[:1024], at=datetime.now(UTC),
        )  # fmt: skip
        producer.produce(console.settings.notify_deliveries_topic, line.to_json(), value.encode()[:64])
    assert producer.flush(30) == 0
    write_compacted(kafka_bootstrap, console.settings.camera_status_topic, statuses)
    write_compacted(kafka_bootstrap, console.settings.notify_targets_topic, targets)


def _target_writes(client: httpx.Client, token: str, key: str, value: str) -> list[httpx.Response]:
    """Every notification write with `value` as the name, and as the free text of a valid one."""
    csrf = {"x-csrf-token": token}
    target = {
        "type": "webhook",
        "url": "https://hooks.example.com/x",
        "rules": {"lists": [value], "cameras": [value]},
    }
    text = orjson.dumps(target).decode()
    form = {"csrf_token": token}
    return [
        client.post("/notifications/targets", data={**form, "name": value, "target": text}),
        client.post("/notifications/targets", data={**form, "name": f"t-{key}", "target": text}),
        client.post("/notifications/targets", data={**form, "name": f"u-{key}", "target": value}),
        client.post(f"/notifications/targets/{segment(value)}/test", data=form),
        client.post(f"/notifications/targets/{segment(value)}/remove", data=form),
        client.put(f"/api/notify/targets/{segment(value)}", json=target, headers=csrf),
        client.put(f"/api/notify/targets/v-{key}", json={"type": value}, headers=csrf),
        client.post(f"/api/notify/targets/{segment(value)}/test", headers=csrf),
        client.delete(f"/api/notify/targets/{segment(value)}", headers=csrf),
    ]


# --- through the API and the forms --------------------------------------------------------------
FORMULA = "=cmd|' /C calc'!A0"  # a label a spreadsheet would run (OWASP CSV injection)


def _hostile_writes(console: Console, address: str, kafka_bootstrap: str) -> list[str]:
    """Every write of the API and the forms with each hostile value (each answer checked), and
    the pages that show what was accepted."""
    client, token = signed_in(address, "ada")
    csrf = {"x-csrf-token": token}
    accepted_cameras = set()
    for number, (key, value) in enumerate(HOSTILE.items()):
        plate, camera = f"A{number:03d}BC77", f"gate-{number}"
        zones = [{"name": value, "polygon": [[0, 0], [1, 0], [1, 1]]}]
        answers = [
            client.post("/api/watchlist", json={"plate": plate, "list": value}, headers=csrf),
            client.post(
                "/api/watchlist", json={"plate": plate, "list": "stolen", "label": value}, headers=csrf
            ),
            client.post("/api/watchlist", json={"plate": value, "list": "stolen"}, headers=csrf),
            client.delete(f"/api/watchlist/{segment(value)}", headers=csrf),
            client.post(f"/api/alerts/{segment(value)}/acknowledge", headers=csrf),
            client.get("/api/sightings", params={"text": value}),
            client.get("/api/sightings", params={"camera": value, "zone": value}),
            client.get("/search", params={"text": value, "camera": value, "zone": value}),
            client.post(
                "/watchlist/add",
                data={"csrf_token": token, "plate": f"B{number:03d}CK97", "list": value, "label": value},
            ),
            client.post("/watchlist/remove", data={"csrf_token": token, "plate": value}),
        ]
        page_write = client.post(
            f"/cameras/{segment(value)}",
            data={"csrf_token": token, "settings": orjson.dumps({"display_name": value}).decode()},
        )
        answers.append(page_write)
        if page_write.status_code == 303:
            accepted_cameras.add(value)
        answers += _target_writes(client, token, key, value)
        for path in (f"/api/cameras/{segment(value)}", f"/api/cameras/{camera}"):
            answer = client.put(path, json={"display_name": value, "zones": zones}, headers=csrf)
            answers.append(answer)
            if answer.status_code == 200:
                accepted_cameras.add(answer.json()["camera_id"])
        for answer in answers:
            _assert_safe_page(str(answer.request.url), answer)
            if answer.request.url.path.startswith("/api/") and answer.status_code >= 400:
                assert isinstance(answer.json()["detail"], str), (key, answer.request.url)
        fresh = httpx.Client(base_url=address, timeout=30.0)
        login_token = re.search(r'name="csrf_token" value="([^"]+)"', fresh.get("/login").text)
        assert login_token
        form = {"csrf_token": login_token.group(1), "username": value, "password": value, "next": value}
        answer = fresh.post("/login", data=form)
        assert answer.status_code in (401, 413, 422), (key, answer.status_code)
        _assert_safe_page(address + "/login", answer)
    # Only what was aimed at: each camera written is one whose own PUT was accepted.
    cameras = read_cameras(kafka_bootstrap, console.settings.cameras_topic).values
    assert set(cameras) == accepted_cameras, set(cameras) ^ accepted_cameras
    assert accepted_cameras, "no hostile camera settings were accepted: nothing to render"
    assert set(_audit_actions(console)) <= {"watchlist.add", "camera.set", "notify.target.set"}
    targets = read_compacted(kafka_bootstrap, console.settings.notify_targets_topic, decode_record).values
    assert set(targets) <= {f"t-{key}" for key in HOSTILE}, set(targets)  # only the valid names
    assert any(value in target.rules.lists for target in targets.values() for value in HOSTILE.values())
    pages = ["/watchlist", "/cameras", "/audit", "/notifications"]
    pages += [f"/cameras/{segment(c)}" for c in sorted(cameras)]
    _get_all(client, pages)
    watchlist = client.get("/watchlist").text
    entries = client.get("/api/watchlist").json()
    assert entries, "no hostile watch-list entry was accepted: nothing to render"
    for entry in entries:  # whatever was accepted is shown, escaped
        assert str(escape(entry["list"])) in watchlist and str(escape(entry["label"] or "")) in watchlist
    return pages


@pytest.fixture(scope="module")
def hostile_writes(
    users_file: Path, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], tuple[str, list[str]]]]:
    """One served console that takes every hostile write once, for the checks over HTTP and those
    in Chromium alike: a call gives (address, the pages to look at), the first one making the
    writes and running their checks."""
    name = f"t-hostile-writes-{uuid.uuid4().hex[:8]}"
    folder = tmp_path_factory.mktemp("hostile-writes")
    with serve_console(folder, users_file, kafka_bootstrap, name) as (console, address):
        pages: list[str] = []

        def written() -> tuple[str, list[str]]:
            if not pages:
                pages.extend(_hostile_writes(console, address, kafka_bootstrap))
            return address, pages

        yield written


def test_hostile_input_through_the_api_and_forms_is_refused_cleanly_or_shown_escaped(hostile_writes) -> None:
    hostile_writes()


# Target fields that would smuggle a header line, a second name or another variable of notify.
HOSTILE_TARGETS = {
    "name-lf": ("w-good\n", {"type": "webhook", "url": "https://hooks.example.com/x"}),
    "name-crlf": ("w-good\r\n", {"type": "webhook", "url": "https://hooks.example.com/x"}),
    "url-crlf": ("w-url", {"type": "webhook", "url": "https://hooks.example.com/x\r\nX-Evil: 1"}),
    "url-host-secret": ("w-host", {"type": "webhook", "url": "https://${SMTP_PASSWORD}.attacker.invalid/"}),
    "url-path-secret": ("w-path", {"type": "webhook", "url": "http://hooks.example.com/x/${DB_PASSWORD}"}),
    "url-query-secret": (
        "w-query", {"type": "webhook", "url": "https://hooks.example.com/x?k=${DB_PASSWORD}"}
    ),
    "slack-in-clear": (
        "w-slack",
        {"type": "webhook", "url": "https://hooks.slack.com/services/T0/B0/XsEcReTpAtH", "format": "slack"},
    ),
    "sender-lf": (
        "m-sender",
        {"type": "email", "host": "smtp.example.com", "sender": "a@b.example\n",
         "recipients": ["o@b.example"]},
    ),
    "recipient-crlf": (
        "m-rcpt",
        {"type": "email", "host": "smtp.example.com", "sender": "a@b.example",
         "recipients": ["o@b.example\r\nBcc: x@y"]},
    ),
    "topic-prefix-lf": (
        "q-prefix", {"type": "mqtt", "host": "mqtt.example.com", "topic_prefix": "stream-worker\n"}
    ),
    "secret-not-a-reference": (
        "w-secret",
        {"type": "webhook", "url": "https://hooks.example.com/x", "secret": "${DB_PASSWORD}\n"},
    ),
}  # fmt: skip


def test_hostile_notification_targets_are_refused_whole_and_nothing_is_written(
    served, kafka_bootstrap: str
) -> None:
    """A line feed in a name, a URL, a sender, a recipient or a topic prefix; a secret reference in
    a URL's host, path or query; a chat webhook's URL in clear: each a 4xx that names no secret,
    through the API and the form, and no target is written."""
    console, address = served
    client, token = signed_in(address, "ada")
    for key, (name, target) in HOSTILE_TARGETS.items():
        answers = [
            client.put(f"/api/notify/targets/{segment(name)}", json=target, headers={"x-csrf-token": token}),
            client.post(
                "/notifications/targets",
                data={"csrf_token": token, "name": name, "target": orjson.dumps(target).decode()},
            ),
        ]
        for answer in answers:
            assert 400 <= answer.status_code < 500, (key, answer.request.url, answer.status_code)
            assert "XsEcReTpAtH" not in answer.text, key
            _assert_safe_page(str(answer.request.url), answer)
    targets = read_compacted(kafka_bootstrap, console.settings.notify_targets_topic, decode_record).values
    assert targets == {}, sorted(targets)
    assert "notify.target.set" not in _audit_actions(console)


def test_hostile_input_through_the_api_and_forms_runs_no_script_in_chromium(hostile_writes, browser) -> None:
    address, pages = hostile_writes()
    _sign_in(browser, address)
    _browse(browser, address, pages)


def test_the_watch_list_export_writes_no_cell_a_spreadsheet_runs(served, kafka_bootstrap: str) -> None:
    """Hostile labels (and one that is a formula) through the API, then `watchlist export`."""
    console, address = served
    client, token = signed_in(address, "ada")
    labels = {f"F{number:03d}AA77": value[:200] for number, value in enumerate([*HOSTILE.values(), FORMULA])}
    for plate, label in labels.items():
        answer = client.post(
            "/api/watchlist",
            json={"plate": plate, "list": "stolen", "label": label},
            headers={"x-csrf-token": token},
        )
        assert answer.status_code in (201, 422), (plate, answer.text)
    topic = console.settings.watchlist_topic
    exported = CliRunner().invoke(
        cli.app, ["watchlist", "export", "--bootstrap-servers", kafka_bootstrap, "--topic", topic]
    )
    assert exported.exit_code == 0, exported.output
    rows = list(csv.reader(io.StringIO(exported.stdout)))[1:]
    assert len(rows) >= 2 and any(row[2] == "'" + FORMULA for row in rows), rows
    for row in rows:
        assert not [cell for cell in row if cell.startswith(("=", "+", "-", "@", "\t", "\r"))], row


# --- on the topics a real store reads -----------------------------------------------------------
def _hostile_records(value: str, name: str, ids: bool) -> tuple[bytes, bytes]:
    """A sighting and an alert (JSON as produced) whose free-text fields are `value`, and their
    ids (camera id included) too if `ids`, else their own. The plate text gets short values only:
    a long one is the contract's to refuse, and its fuzzy index the store's own issue (#33,
    finding 4); the database test stores the 10,000 characters there."""
    sighting = plate_sighting(name, "B840OK197").model_dump(mode="json")
    alert = plate_alert(name, "B840CK197", "B840OK197").model_dump(mode="json")
    text = value if len(value) <= 16 else "B840OK197"
    sighting.update(text=text, candidates=[{"text": text, "score": 0.5}])
    sighting["best_read"].update(zone=value, frame_id=value, event_id=value, text=text)
    alert.update(list=value, label=value, frame_id=value, event_id=value, plate=text, candidate=text)
    if ids:
        sighting.update(sighting_id=value, camera_id=value)
        alert.update(alert_id=value, sighting_id=value, camera_id=value)
    return orjson.dumps(sighting), orjson.dumps(alert)


def test_hostile_records_on_the_topics_never_stall_the_store_and_render_escaped(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, users_file: Path
) -> None:
    topics = (f"{unique_name}-sightings", f"{unique_name}-alerts")
    create_topics(kafka_bootstrap, list(topics), 1)
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", f"{unique_name}-store",
        "--sightings-topic", topics[0],
        "--alerts-topic", topics[1],
        "--watchlist-topic", f"{unique_name}-wl",
        "--cameras-topic", f"{unique_name}-cam",
        "--data-dir", str(tmp_path / "data"),
        "--users-file", str(users_file),
        "--console-port", "0",
        "--metrics-port", "0",
        "--retention-days", "0",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    try:
        address = store.wait_for_log(lambda line: line.get("msg") == "store started", "start")["console"]
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        for key, value in HOSTILE.items():
            for ids in (True, False):
                sighting, alert = _hostile_records(value, f"hostile-{key}-{ids}", ids)
                producer.produce(topics[0], sighting, key=b"gate")
                producer.produce(topics[1], alert, key=b"gate")
        producer.produce(topics[0], plate_sighting("after", "A123BC77").to_json(), key=b"gate")
        assert producer.flush(30) == 0
        api = httpx.Client(base_url=address, headers={"authorization": f"Bearer {TOKENS['ada']}"}, timeout=30)
        deadline = time.monotonic() + 120
        # The record produced after the hostile ones is stored: none of them stalled the store.
        while api.get(f"/api/sightings/{sighting_id('after')}").status_code != 200:
            assert store.is_running(), store.log_tail()
            assert time.monotonic() < deadline, store.log_tail()
            time.sleep(0.5)
        client, _ = signed_in(address, "ada")
        stored = [item["sighting_id"] for item in client.get("/api/sightings?limit=200").json()["items"]]
        assert len(stored) > 1, "no hostile record was stored: nothing to render"
        per_id = [f"/sightings/{segment(s)}" for s in stored] + [
            f"/api/sightings/{segment(s)}" for s in stored
        ]
        _get_all(client, ["/", f"/search?since={SINCE}", "/alerts?show=all", "/cameras", *per_id])
        assert store.is_running(), store.log_tail()
    finally:
        store.stop()


# --- oversized bodies, on every route ------------------------------------------------------------
# Refused before they are read, against the console served by uvicorn on a real socket: every
# route (walked from the app itself) answers 413 at once to a Content-Length above its cap, without
# waiting for a byte of the body; a body sent without one (chunked) is refused as soon as it passes
# the cap, long before the client has sent it all; a viewer's write is refused (403) with its body
# unread. A raw socket sends the requests, so that the server reads only what it asks for.
HUGE = 300 * 1024 * 1024
ANSWER_S = 5.0  # a refusal comes at once; a server that waits for the body never answers in time


@pytest.fixture
def listening(tmp_path: Path, users_file: Path) -> Iterator[tuple[Console, str]]:
    """The console served by the store's console thread (no broker: nothing here writes to one)."""
    console = make_console(tmp_path, users_file)
    thread = start_console(console.settings, console.database)
    assert thread is not None
    yield console, thread.address.rstrip("/")
    thread.stop()
    console.database.dispose()


def every_route(console: Console) -> list[tuple[str, str]]:
    """(method, path) for each route and method of the app, path parameters filled with `x`."""
    found = []
    for route in _flat(console.app.routes):
        if isinstance(route, APIRoute):
            path = re.sub(r"\{[^}]+\}", "x", route.path_format)
            found += [(method, path) for method in sorted(route.methods)]
        elif isinstance(route, Mount):
            found.append(("GET", route.path + "/app.css"))
        else:
            found += [(method, route.path) for method in sorted(getattr(route, "methods", None) or ["GET"])]
    return [*found, ("POST", "/nowhere"), ("PUT", "/api/nowhere")]


def _flat(routes: list) -> Iterator:
    """The routes, those of included routers too (newer FastAPI keeps them nested)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        yield from _flat(inner.routes) if inner is not None else (route,)


def _connect(address: str) -> socket.socket:
    parts = urlsplit(address)
    return socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_S)


def _head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: console", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _status(sock: socket.socket) -> int:
    """The status of the answer, read within ANSWER_S (0 when none came)."""
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    found = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return int(found.group(1)) if found else 0


def declared(address: str, method: str, path: str, length: int, headers: dict[str, str]) -> tuple[int, float]:
    """The status answered to headers declaring `length` bytes of body, none of it sent, and the
    seconds it took."""
    with _connect(address) as sock:
        started = time.monotonic()
        sock.sendall(_head(method, path, {**headers, "content-length": str(length)}))
        return _status(sock), time.monotonic() - started


def streamed(address: str, method: str, path: str, total: int, headers: dict[str, str]) -> tuple[int, int]:
    """The status answered to a chunked body of up to `total` bytes, and how many the client had
    sent when the answer came (it stops sending then)."""
    chunk = b"a=" + b"x" * (64 * 1024 - 2)
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    with _connect(address) as sock:
        sock.sendall(_head(method, path, {**headers, "transfer-encoding": "chunked"}))
        while sent < total:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(chunk)
        else:
            sock.sendall(b"0\r\n\r\n")
        return _status(sock), sent


ADMIN = {"authorization": f"Bearer {TOKENS['ada']}", "content-type": "application/json"}


def test_every_route_refuses_a_declared_oversized_body_before_reading_it(listening) -> None:
    console, address = listening
    routes = every_route(console)
    assert len(routes) > 40, routes
    flat = list(_flat(console.app.routes))
    templates = {(method, route.path) for route in flat for method in getattr(route, "methods", None) or ()}
    assert set(LARGER_BODIES) <= templates, set(LARGER_BODIES) - templates  # each names a real route
    limit_of = route_limits()
    for method, path in routes:
        for headers in (ADMIN, {"content-type": "application/x-www-form-urlencoded"}):
            status, seconds = declared(address, method, path, HUGE, headers)
            assert status == 413, (method, path, headers, status)
            assert seconds < ANSWER_S, (method, path, seconds)
        # One byte over the route's own cap is refused too; what a GET takes is nothing at all.
        scope = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
        cap = limit_of(scope)
        assert cap == 0 if method in NO_BODY_METHODS else cap >= BODY_LIMIT, (method, path, cap)
        assert declared(address, method, path, cap + 1, ADMIN)[0] == 413, (method, path, cap)


@pytest.mark.parametrize(
    ("path", "headers", "cap"),
    [
        ("/login", {"content-type": "application/x-www-form-urlencoded"}, BODY_LIMIT),
        ("/api/watchlist/import", {**ADMIN, "content-type": "text/csv"}, IMPORT_BODY_LIMIT),
        ("/api/watchlist", ADMIN, BODY_LIMIT),
    ],
)
def test_a_chunked_body_is_refused_once_it_passes_the_cap(listening, path, headers, cap) -> None:
    _, address = listening
    total = 64 * 1024 * 1024
    status, sent = streamed(address, "POST", path, total, headers)
    assert status == 413, (path, status, sent)
    assert sent < total // 2, (path, sent)  # answered long before the client was done
    assert sent >= cap, (path, sent)  # not before the cap was passed


def test_a_write_refused_whatever_its_body_is_refused_with_its_body_unread(listening) -> None:
    _, address = listening
    by_token = {"authorization": f"Bearer {TOKENS['vic']}", "content-type": "text/csv"}
    status, seconds = declared(address, "POST", "/api/watchlist/import", 2 * 1024 * 1024, by_token)
    assert (status, seconds < ANSWER_S) == (403, True), (status, seconds)
    by_token["content-type"] = "application/json"
    assert declared(address, "POST", "/api/watchlist", BODY_LIMIT, by_token)[0] == 403
    # A viewer's session (its cookie, no CSRF token) posting a CSV to the page's import.
    client, _ = signed_in(address, "vic")
    cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    form = {"cookie": cookie, "content-type": "multipart/form-data; boundary=b", "accept": "text/html"}
    status, seconds = declared(address, "POST", "/watchlist/import", 2 * 1024 * 1024, form)
    assert (status, seconds < ANSWER_S) == (403, True), (status, seconds)
    # An admin's session is still asked for the body (and its CSRF token in it): no refusal early.
    admin, _ = signed_in(address, "ada")
    cookie = "; ".join(f"{name}={value}" for name, value in admin.cookies.items())
    status, _ = declared(address, "POST", "/watchlist/import", 1024, {**form, "cookie": cookie})
    assert status == 0  # waiting for the body it may read
    # ... but not when its CSRF check fails whatever the body holds: a wrong header, or none on a
    # body that is no form.
    wrong = {**form, "cookie": cookie, "x-csrf-token": "not-the-token"}
    assert declared(address, "POST", "/watchlist/import", 1024, wrong)[0] == 403
    csv = {"cookie": cookie, "content-type": "text/csv"}
    status, seconds = declared(address, "POST", "/api/watchlist/import", 2 * 1024 * 1024, csv)
    assert (status, seconds < ANSWER_S) == (403, True), (status, seconds)
