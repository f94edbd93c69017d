"""The console's visits on a real SQLite store: the Visits page (who is on site now, per site, with
entry time and dwell so far; the visits found by plate, site, camera, state and time, with their
dwell), a sighting's page listing its plate's visits, the API, escaping and bad input; and the same
pages in a real Chromium under the Content-Security-Policy."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from store_records import T0, plate_sighting, plate_visit, sighting_id

from .conftest import PASSWORDS, TOKENS, Console, signed_in

NOW = datetime.now(UTC).replace(microsecond=0)
HOSTILE_PLATE = "<script>x</script>"  # within the contract's 32 characters


@pytest.fixture(autouse=True)
def _now_is_when_the_test_starts() -> None:
    """The dwell so far is counted from NOW: set it as each test starts, not at import (a suite's
    run can take half an hour between the two)."""
    global NOW
    NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def stored(console: Console) -> Console:
    """At depot: B840OK197 on site for 2 h, A123BC77's visit closed after 1 h 30 min (its exit read
    A123BC777); at yard: a plate that is markup, on site for 5 minutes."""
    console.write(
        [plate_sighting("b", "B840OK197", NOW - timedelta(hours=2))],
        visits=[
            plate_visit("b", "B840OK197", entered_at=NOW - timedelta(hours=2)),
            plate_visit("a", "A123BC77", entered_at=T0),
            plate_visit("a", "A123BC77", "closed", dwell=timedelta(minutes=90), exit_text="A123BC777"),
            plate_visit("x", HOSTILE_PLATE, entered_at=NOW - timedelta(minutes=5), site="yard"),
        ],
    )
    return console


@pytest.fixture
def viewer(stored: Console) -> TestClient:
    client, _ = signed_in(stored.app, "vic")
    return client


def section(page: str, marker: str) -> str:
    return page.split(marker, 1)[1].split("</section>", 1)[0]


def test_on_site_now_per_site_with_entry_time_and_dwell_so_far(viewer: TestClient) -> None:
    answer = viewer.get("/visits")
    assert answer.status_code == 200
    page = answer.text
    assert '<a href="/visits">Visits</a>' in page
    on_site = section(page, '<section id="on-site">')
    depot, yard = on_site.split('<h3 class="site">')[1:]
    assert depot.startswith("depot <small>(1)</small>") and "B840OK197" in depot
    assert "A123BC77" not in on_site  # closed: not on site
    entered = (NOW - timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")
    assert entered in depot and re.search(r"2 h 0[0-1] min <small>so far</small>", depot)
    assert yard.startswith("yard <small>(1)</small>") and re.search(r"[5-6] min \d\d s <small>so far", yard)
    assert "&lt;script&gt;x&lt;/script&gt;" in yard and HOSTILE_PLATE not in page
    assert 'id="visits"' not in page  # no filter: no search
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/console.js">']
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert 'id="nobody-on-site"' in viewer.get("/visits", params={"site": "elsewhere"}).text


def test_visits_found_by_plate_and_filters_with_their_dwell(viewer: TestClient) -> None:
    def found(**params) -> str:
        page = viewer.get("/visits", params=params)
        assert page.status_code == 200, page.text
        return section(page.text, "<h2>Find visits</h2>")

    closed = found(text="a123bc777")  # the exit's read finds the visit
    assert 'A123BC77</a> → <span class="text">A123BC777</span>' in closed
    assert "1 h 30 min" in closed and "so far" not in closed
    assert f'href="/sightings/{sighting_id("a")}"' in closed
    assert "B840OK197" in found(text="B840CK197", fuzzy="true") and 'id="no-visits"' in found(
        text="B840CK197"
    )
    assert "B840OK197" not in found(state="closed") and "A123BC77" in found(state="closed")
    assert "A123BC77" not in found(site="yard") and "&lt;script&gt;" in found(site="yard")
    assert "B840OK197" in found(since=(NOW - timedelta(hours=3)).isoformat()[:19])
    assert "A123BC77" not in found(since=(NOW - timedelta(hours=3)).isoformat()[:19])


def test_a_sightings_page_lists_its_plates_visits(stored: Console, viewer: TestClient) -> None:
    page = viewer.get(f"/sightings/{sighting_id('b')}").text
    visits = section(page, '<section id="plate-visits">')
    assert "depot" in visits and "so far" in visits and "/visits?text=B840OK197" in visits


def test_the_api_and_bad_input(stored: Console) -> None:
    api = TestClient(stored.app, headers={"authorization": f"Bearer {TOKENS['vic']}"})
    items = api.get("/api/visits", params={"text": "A123BC77"}).json()["items"]
    assert [(v["plate"], v["dwell_s"], v["ended_by"]) for v in items] == [("A123BC77", 5400.0, "exit")]
    assert [v["site"] for v in api.get("/api/visits/on-site").json()] == ["depot", "yard"]
    assert [v["plate"] for v in api.get("/api/visits/on-site", params={"site": "yard"}).json()] == [
        HOSTILE_PLATE  # JSON keeps it as it is
    ]
    client, _ = signed_in(stored.app, "vic")
    for path, params in (
        ("/visits", {"state": "gone"}),
        ("/visits", {"since": "yesterday"}),
        ("/visits", {"text": "B840", "cursor": "garbage"}),
        ("/visits", {"text": "x" * 500}),
        ("/api/visits", {"limit": "0"}),
        ("/api/visits", {"state": "gone"}),
    ):
        answer = client.get(path, params=params)
        assert 400 <= answer.status_code < 500, (path, params, answer.status_code)
        assert "Traceback" not in answer.text
    signed_out = TestClient(stored.app, follow_redirects=False)
    assert signed_out.get("/visits").status_code in (303, 401)
    assert signed_out.get("/api/visits").status_code == 401


@pytest.mark.integration
def test_the_visits_pages_in_chromium_under_the_csp(served, browser) -> None:
    """The served console in a real Chromium: the Visits page shows who is on site and finds a
    visit, the sighting's page lists its visits, no markup of a plate runs, no CSP violation."""
    from console_browser import screenshot, sign_in, wait
    from selenium.webdriver.common.by import By

    from .test_console_security import VIOLATIONS

    console, address = served
    console.write(
        [plate_sighting("b", "B840OK197", NOW - timedelta(hours=2))],
        visits=[
            plate_visit("b", "B840OK197", entered_at=NOW - timedelta(hours=2)),
            plate_visit("a", "A123BC77", entered_at=T0),
            plate_visit("a", "A123BC77", "closed", dwell=timedelta(minutes=90)),
            plate_visit("x", "<img src=x onerror=alert(1)>", entered_at=NOW, site="yard"),
        ],
    )
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": VIOLATIONS})
    sign_in(browser, address, "vic", PASSWORDS["vic"])
    browser.find_element(By.LINK_TEXT, "Visits").click()
    sites = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#on-site h3.site"))
    assert [site.text.split()[0] for site in sites] == ["depot", "yard"]
    first = browser.find_element(By.CSS_SELECTOR, "#on-site-1 tbody tr")
    assert "B840OK197" in first.text and "so far" in first.text
    assert browser.find_elements(By.CSS_SELECTOR, 'img[src="x"]') == []
    browser.find_element(By.ID, "text").send_keys("A123BC77")
    browser.find_element(By.ID, "find-visits").click()
    [row] = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#visits tbody tr"))
    assert "A123BC77" in row.text and "1 h 30 min" in row.text
    screenshot(browser, "visits")
    browser.get(f"{address}/sightings/{sighting_id('b')}")
    [visit] = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#plate-visits-table tbody tr"))
    assert "depot" in visit.text
    assert browser.execute_script("return window.__violations") == []
