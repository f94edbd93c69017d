"""The console's security findings, each against a real running store (the console thread over HTTP,
on the real broker) and, for 1 and 6, a real headless Chromium:
1. an id put into a URL path stays one segment of it (an alert whose id is
   `../cameras/gate-1/remove?` cannot turn Acknowledge into "remove camera gate-1");
5. cursors, `before_seq` and dates out of range are a 4xx that says why (not a 500 or a dropped
   connection), and every answer, a 500 included, has the security headers;
6. a Content-Security-Policy on every answer, no inline handler left, the pages still working in
   Chromium under it; `no-store` on everything with plate data; no Swagger UI from a CDN;
7. removing the settings of a camera that has none is a 404 and audits nothing."""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import console_browser
import httpx
import pytest
from console_browser import wait
from fastapi.testclient import TestClient
from store_records import FAKE_JPEG, plate_alert, plate_sighting, sighting_id

from stream_worker.cameras.store import read_cameras, write_settings
from stream_worker.contracts.cameras import parse_settings

from .conftest import PASSWORDS, TOKENS, Console, make_console, signed_in, stored_raw

pytestmark = pytest.mark.integration
GATE = parse_settings({"display_name": "Gate 1", "masks": [[[0, 0], [0.5, 0], [0.5, 0.5]]]})
SECURITY_HEADERS = ("x-frame-options", "x-content-type-options", "referrer-policy", "content-security-policy")
# Where a page could run script or style that is not one of the console's own files.
INLINE = re.compile(r"""\son[a-z]+\s*=|javascript:|\sstyle\s*=|<script(?![^>]*\ssrc=)""", re.IGNORECASE)
# Collects the page's CSP violations; run by Chromium before the page's own scripts (CDP).
VIOLATIONS = """window.__violations = [];
document.addEventListener('securitypolicyviolation',
  e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));"""


def _cursor(stamp: str, seq: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([stamp, seq]).encode()).decode().rstrip("=")


def _gate_configured(console: Console, bootstrap: str, address: str) -> None:
    """gate-1's settings on the topic, and on the served console's pages (it follows the topic)."""
    write_settings(bootstrap, "gate-1", GATE, console.settings.cameras_topic)
    api = httpx.Client(base_url=address, headers={"authorization": f"Bearer {TOKENS['ada']}"}, timeout=30)
    deadline = time.monotonic() + 30
    while "gate-1" not in {camera["camera_id"] for camera in api.get("/api/cameras").json()}:
        assert time.monotonic() < deadline, "the console never showed gate-1's settings"
        time.sleep(0.2)


def _audit_actions(console: Console) -> list[str]:
    from stream_worker.store import queries

    with console.database.connect() as connection:
        return [row.action for row in queries.audit(connection, 100)]


def _sign_in(driver, address: str, name: str) -> None:
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": VIOLATIONS})
    console_browser.sign_in(driver, address, name, PASSWORDS[name])


def _no_violations(driver) -> None:
    assert driver.execute_script("return window.__violations") == [], driver.current_url


# --- 1: ids in URL paths ------------------------------------------------------------------------
def test_an_alert_id_holding_a_path_cannot_turn_acknowledge_into_a_camera_removal(
    served, browser, kafka_bootstrap: str
) -> None:
    from selenium.webdriver.common.by import By

    console, address = served
    _gate_configured(console, kafka_bootstrap, address)
    stored_raw(console, alerts=[{"name": "hostile", "alert_id": "../cameras/gate-1/remove?"}])
    _sign_in(browser, address, "ada")
    browser.get(address + "/alerts")
    [button] = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#alerts button.ack"))
    button.click()
    # The id holds "/": its encoded path matches no route (a clean 404), instead of the browser
    # resolving "/alerts/../cameras/gate-1/remove?/acknowledge" to the camera's removal.
    wait(browser, lambda d: urlsplit(d.current_url).path != "/alerts", timeout=15)
    assert wait(browser, lambda d: d.find_elements(By.TAG_NAME, "h1"))[0].text == "404"
    assert urlsplit(browser.current_url).path == "/alerts/..%2Fcameras%2Fgate-1%2Fremove%3F/acknowledge"
    assert read_cameras(kafka_bootstrap, console.settings.cameras_topic).values["gate-1"] == GATE
    assert _audit_actions(console) == []


def test_camera_and_sighting_ids_are_encoded_in_every_link_and_form(served) -> None:
    console, address = served
    odd = "x?y#z"
    stored_raw(
        console,
        sightings=[{"name": "odd", "sighting_id": "s?1#../x", "camera_id": odd, "has_picture": True}],
        alerts=[{"name": "odd", "alert_id": "a?1#x", "sighting_id": "s?1#../x", "camera_id": odd}],
    )
    client, _ = signed_in(address, "ada")
    cameras = client.get("/cameras").text
    assert 'href="/cameras/x%3Fy%23z"' in cameras and 'href="/cameras/x?y#z"' not in cameras
    alerts = client.get("/alerts").text
    for url in (
        "/sightings/s%3F1%23..%2Fx",
        "/api/sightings/s%3F1%23..%2Fx/picture",
        "/alerts/a%3F1%23x/acknowledge",
    ):
        assert f'"{url}"' in alerts, url
    found = client.get("/search", params={"camera": odd}).text
    assert '"/sightings/s%3F1%23..%2Fx"' in found and '"/api/sightings/s%3F1%23..%2Fx/picture"' in found
    page = client.get("/cameras/x%3Fy%23z")
    if page.status_code == 200:  # an id the camera contract still accepts: its forms keep it whole
        assert 'action="/cameras/x%3Fy%23z"' in page.text
        assert 'data-frame="/api/cameras/x%3Fy%23z/frame"' in page.text
    else:  # refused by the contract's safe character set: a clean 4xx
        assert page.status_code == 422, page.text
    from stream_worker.store.web import live

    feed = b"".join(live._poll(console.app.state.backend, {"sighting": None, "alert": None}))
    assert feed.count(b'"url":"/sightings/s%3F1%23..%2Fx"') == 2  # the sighting and its alert
    assert feed.count(b'"picture":"/api/sightings/s%3F1%23..%2Fx/picture"') == 2


def test_a_bare_dot_id_is_never_a_dot_segment() -> None:
    from stream_worker.store.web.paths import segment

    for value in (".", ".."):
        resolved = urlsplit(urljoin("http://console/alerts/", f"{segment(value)}/acknowledge")).path
        assert resolved.startswith("/alerts/") and resolved.endswith("/acknowledge"), (value, resolved)
    assert segment("../a?b#c d") == "..%2Fa%3Fb%23c%20d"


# --- 5: out-of-range input ----------------------------------------------------------------------
FAR = "9999-12-31T23:59:59-05:00"  # past year 9999 in UTC
NEAR = "0001-01-01T00:00:00+05:00"  # before year 1 in UTC
OUT_OF_RANGE_CURSORS = [
    _cursor("2026-03-01T12:00:00+00:00", 2**63),
    _cursor("2026-03-01T12:00:00+00:00", 10**30),
    _cursor(FAR, 1),
    _cursor(NEAR, 1),
]
OUT_OF_RANGE_READS = [
    *[("/api/sightings", {"cursor": c}) for c in OUT_OF_RANGE_CURSORS],
    *[("/api/alerts", {"cursor": c}) for c in OUT_OF_RANGE_CURSORS],
    *[("/search", {"text": "B840OK197", "cursor": c}) for c in OUT_OF_RANGE_CURSORS],
    *[("/alerts", {"cursor": c}) for c in OUT_OF_RANGE_CURSORS],
    ("/api/sightings", {"since": FAR}),
    ("/api/sightings", {"until": NEAR}),
    ("/search", {"since": FAR}),
    ("/search", {"until": NEAR}),
    ("/api/audit", {"before_seq": str(2**63)}),
    ("/api/audit", {"before_seq": str(-(2**63) - 1)}),
    ("/api/audit", {"before_seq": "1" + "0" * 30}),
]


def test_values_out_of_range_are_a_clear_4xx_with_the_security_headers(served) -> None:
    console, address = served
    console.write([plate_sighting("s1", "B840OK197")], [plate_alert("a1", "B840OK197")])
    client, token = signed_in(address, "ada")
    for path, params in OUT_OF_RANGE_READS:
        for accept in ("text/html", "application/json"):
            answer = client.get(path, params=params, headers={"accept": accept})
            _assert_clear_4xx(answer, (path, params, accept))
    for expiry in (FAR, NEAR):
        answer = client.post(
            "/api/watchlist",
            json={"plate": "B840CK197", "list": "stolen", "expires_at": expiry},
            headers={"x-csrf-token": token},
        )
        _assert_clear_4xx(answer, expiry)
        assert "expires_at" in answer.json()["detail"] and "out of range" in answer.json()["detail"]
        form = {"csrf_token": token, "plate": "B840CK197", "list": "stolen", "expires_at": expiry}
        _assert_clear_4xx(client.post("/watchlist/add", data=form), expiry)
        csv = f"plate,list,expires_at\nB840CK197,stolen,{expiry}\n".encode()
        headers = {"x-csrf-token": token, "content-type": "text/csv"}
        answer = client.post("/api/watchlist/import", content=csv, headers=headers)
        _assert_clear_4xx(answer, expiry)
        assert "row 2" in answer.json()["detail"] and "out of range" in answer.json()["detail"]
        files = {"file": ("list.csv", csv, "text/csv")}
        answer = client.post("/watchlist/import", data={"csrf_token": token}, files=files)
        _assert_clear_4xx(answer, expiry)
    assert _audit_actions(console) == []


def _assert_clear_4xx(answer, case: object) -> None:
    assert 400 <= answer.status_code < 500, (case, answer.status_code, answer.text[:300])
    assert "Traceback" not in answer.text and "internal error" not in answer.text
    for name in SECURITY_HEADERS:
        assert name in answer.headers, (case, name)
    if answer.headers["content-type"].startswith("application/json"):
        assert answer.json()["detail"], case


def test_an_unexpected_error_is_a_500_with_the_security_headers(tmp_path: Path, users_file: Path) -> None:
    console = make_console(tmp_path, users_file)

    def broken() -> None:
        raise RuntimeError("a fault the console did not expect")

    console.app.add_api_route("/api/broken", broken)
    client = TestClient(
        console.app, raise_server_exceptions=False, headers={"authorization": f"Bearer {TOKENS['vic']}"}
    )
    answer = client.get("/api/broken")
    assert (answer.status_code, answer.json()) == (500, {"detail": "internal error (logged)"})
    for name in SECURITY_HEADERS:
        assert name in answer.headers, name
    assert answer.headers["cache-control"] == "no-store"
    console.database.dispose()


# --- 6: headers and third parties ---------------------------------------------------------------
def test_every_answer_has_the_csp_no_page_has_inline_script_and_plate_data_is_not_stored(
    served, kafka_bootstrap: str
) -> None:
    console, address = served
    _gate_configured(console, kafka_bootstrap, address)
    console.write(
        [plate_sighting("s1", "B840OK197", picture=FAKE_JPEG), plate_sighting("s2", "A123BC77")],
        [
            plate_alert("a1", "B840CK197", "B840OK197", sighting="s1"),
            plate_alert("a2", "A123BC77", sighting="s2"),
        ],
    )
    client, _ = signed_in(address, "ada")
    pages = [
        "/",
        "/search?text=B840OK197",
        "/alerts?show=all",
        f"/sightings/{sighting_id('s1')}",
        "/cameras",
        "/cameras/gate-1",
        "/watchlist",
        "/audit",
        "/no-such-page",
    ]
    for path in pages:
        answer = client.get(path, headers={"accept": "text/html"})
        assert answer.status_code in (200, 404), (path, answer.status_code)
        _assert_locked_down(answer, path)
        assert not INLINE.search(answer.text), (path, INLINE.search(answer.text))
    assert "ack" in client.get("/alerts").text and "Remove the settings" in client.get("/cameras/gate-1").text
    login = httpx.get(address + "/login")
    _assert_locked_down(login, "/login")
    assert not INLINE.search(login.text)
    for path in (
        "/api/me",
        "/api/sightings",
        f"/api/sightings/{sighting_id('s1')}",
        f"/api/sightings/{sighting_id('s1')}/picture",
        "/api/alerts",
        "/api/watchlist",
        "/api/cameras",
        "/api/audit",
        "/api/openapi.json",
    ):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[:200])
        _assert_locked_down(answer, path)
    assert client.get(f"/api/sightings/{sighting_id('s1')}/picture").content == FAKE_JPEG
    assert client.get("/api/docs").status_code == 404  # no Swagger UI from a CDN
    static = client.get("/static/console.js")
    assert static.status_code == 200 and "no-store" not in static.headers.get("cache-control", "")
    assert "content-security-policy" in static.headers


def _assert_locked_down(answer, path: str) -> None:
    policy = answer.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy, (path, policy)
    assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, (path, policy)
    assert answer.headers.get("cache-control") == "no-store", (path, answer.headers.get("cache-control"))


def test_the_pages_work_in_chromium_under_the_csp(served, browser, kafka_bootstrap: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.expected_conditions import alert_is_present

    console, address = served
    _gate_configured(console, kafka_bootstrap, address)
    console.write([plate_sighting("s1", "B840OK197")], [plate_alert("a1", "B840CK197", sighting="s1")])
    _sign_in(browser, address, "ada")
    _no_violations(browser)
    browser.get(address + "/alerts")  # the alert's sighting has no picture: the image goes
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#alerts button.ack"))
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#alerts img"))
    _no_violations(browser)
    browser.get(address + "/cameras")
    browser.find_element(By.NAME, "camera").send_keys("yard_2")
    browser.find_element(By.CSS_SELECTOR, "#configure-camera button").click()
    wait(browser, lambda d: urlsplit(d.current_url).path == "/cameras/yard_2")
    assert browser.find_element(By.TAG_NAME, "h1").text == "yard_2"
    _no_violations(browser)
    browser.get(address + "/cameras/gate-1")
    canvas = browser.find_element(By.ID, "canvas")
    assert "/api/cameras/gate-1/frame" in browser.execute_script(
        "return arguments[0].style.backgroundImage", canvas
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#canvas polygon.mask")) == 1  # camera.js ran
    browser.find_element(By.CSS_SELECTOR, "button.remove").click()
    wait(browser, alert_is_present()).dismiss()  # asked first: nothing removed
    assert "gate-1" in read_cameras(kafka_bootstrap, console.settings.cameras_topic).values
    browser.find_element(By.CSS_SELECTOR, "button.remove").click()
    wait(browser, alert_is_present()).accept()
    wait(browser, lambda d: "gate-1 is back to the default settings." in d.page_source, timeout=15)
    _no_violations(browser)
    browser.get(address + "/sightings/nowhere")
    browser.find_element(By.ID, "back").click()
    wait(browser, lambda d: urlsplit(d.current_url).path == "/cameras")
    _no_violations(browser)


# --- 7: removing what is not there --------------------------------------------------------------
def test_removing_a_camera_without_settings_is_a_404_and_audits_nothing(served, kafka_bootstrap: str) -> None:
    console, address = served
    client, token = signed_in(address, "ada")
    csrf = {"x-csrf-token": token}
    answer = client.delete("/api/cameras/nowhere", headers=csrf)
    assert answer.status_code == 404 and "nowhere" in answer.json()["detail"]
    assert client.post("/cameras/nowhere/remove", data={"csrf_token": token}).status_code == 404
    assert _audit_actions(console) == []
    assert client.put("/api/cameras/gate-1", json={"display_name": "Gate 1"}, headers=csrf).status_code == 200
    assert client.delete("/api/cameras/gate-1", headers=csrf).json()["changed"] == 1
    assert client.delete("/api/cameras/gate-1", headers=csrf).status_code == 404
    assert _audit_actions(console) == ["camera.remove", "camera.set"]
    assert "gate-1" not in read_cameras(kafka_bootstrap, console.settings.cameras_topic).values
