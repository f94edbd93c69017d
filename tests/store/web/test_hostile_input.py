"""The hostile-input suite of issue #33: every free-text field the console shows (sightings,
alerts, watch-list entries, camera settings and live states, notification targets and the delivery
log, the audit) and every id, fed the issue's strings
(HTML, template syntax, `../`, `?`, `#`, a right-to-left override, NUL, 10,000 characters) three
ways: straight into the store's database (past the contracts: defence in depth), through the API
and the forms, and as records on the topics a real `stream-worker store` process reads. Whatever
got in is rendered escaped, every id in a link or a form stays one path segment, no script runs
in Chromium (nor is any blocked by the Content-Security-Policy: nothing inline was made), nothing
answers 5xx, no write lands anywhere but where it was aimed, and the store keeps storing."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import console_browser
import httpx
import orjson
import pytest
from confluent_kafka import Producer
from console_browser import chromium_available, wait
from markupsafe import escape
from service_processes import ServiceProcess
from store_records import plate_alert, plate_sighting, sighting_id

from stream_worker.cameras.status import CameraStatus
from stream_worker.cameras.store import read_cameras, write_settings
from stream_worker.contracts.cameras import parse_settings
from stream_worker.contracts.notify import DeliveryOutcome, NotifyDelivery, decode_record
from stream_worker.launchers.broker import create_topics
from stream_worker.service.compacted import read_compacted, write_compacted
from stream_worker.store import queries
from stream_worker.store.web.paths import segment

from .conftest import PASSWORDS, TOKENS, Console, signed_in, stored_raw

pytestmark = pytest.mark.integration
needs_chromium = pytest.mark.skipif(not chromium_available(), reason="no chromium")

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
    r"/|/(search|alerts|watchlist|cameras|audit|login|logout)"
    r"|/static/[a-z]+\.(js|css)|/watchlist/(add|remove|import)|/sessions/revoke"
    r"|/notifications|/notifications/targets|/notifications/targets/[^/?#]+/(remove|test)"
    r"|/sightings/[^/?#]+|/api/sightings/[^/?#]+/picture|/alerts/[^/?#]+/acknowledge"
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
@needs_chromium
def test_hostile_rows_in_the_database_render_escaped_and_redirect_no_write(
    served, browser, kafka_bootstrap: str
) -> None:
    console, address = served
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
    _hostile_console_topics(console, kafka_bootstrap)
    client, token = signed_in(address, "ada")
    lists = ["/", "/search?since=" + SINCE, "/alerts?show=all", "/cameras", "/audit", "/notifications"]
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
    _get_all(client, lists + per_id + ["/notifications?edit=t-html", "/api/camera-status"])
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

    _sign_in(browser, address)
    from selenium.webdriver.common.by import By

    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#live-sightings li")) == len(HOSTILE))
    _browse(browser, address, [*lists[1:], "/notifications?edit=t-html"])
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
@needs_chromium
def test_hostile_input_through_the_api_and_forms_is_refused_cleanly_or_shown_escaped(
    served, browser, kafka_bootstrap: str
) -> None:
    console, address = served
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
        assert answer.status_code in (401, 422), (key, answer.status_code)
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

    _sign_in(browser, address)
    _browse(browser, address, pages)


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
