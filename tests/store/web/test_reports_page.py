"""The console's Reports page on a real SQLite store: a viewer sees every report's chart (inline
SVG, nothing the Content-Security-Policy forbids) and figures, and the CSV / JSON Lines downloads
of the same range add up to the page's numbers, their cells escaped against formula injection; in
a real Chromium, every chart shows with no CSP violation and the CSV, JSON Lines and PNG files of
each report carry the page's figures."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from datetime import timedelta
from urllib.parse import urlencode

import orjson
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from store_records import T0, camera_status, health_samples, plate_alert, plate_sighting, plate_visit

from stream_worker.store.report_counts import rebuild
from stream_worker.store.reports import REPORTS, ReportRange
from stream_worker.store.schema import sightings
from stream_worker.store.writer import write_batch

from .conftest import PASSWORDS, Console, signed_in, stored_raw

RANGE = {"since": T0.isoformat(), "until": (T0 + timedelta(days=2)).isoformat()}
HOSTILE_CAMERA = '=HYPERLINK("http://evil.example","x")'
# Each report's chart: which column it draws against which, summed over the rows that share it.
CHARTED = {
    "hourly": ("hour", "sightings"),
    "daily": ("day", "sightings"),
    "plates": ("day", "unique_plates"),
    "top-plates": ("plate", "sightings"),
    "alerts": ("list", "alerts"),
    "health": ("hour", "minutes_up"),
    "dwell": ("dwell", "visits"),
}


def store_health(console: Console) -> None:
    """gate streams for two minutes of 12:00 (then is unreachable), yard for one minute of 13:00."""
    statuses = [
        camera_status("gate", T0, 100),
        camera_status("gate", T0 + timedelta(minutes=1), 160),
        camera_status("gate", T0 + timedelta(minutes=2), 160, state="unreachable"),
        camera_status("yard", T0 + timedelta(hours=1), 7),
    ]
    with console.database.begin() as connection:
        write_batch(connection, [], [], health=health_samples(*statuses))


@pytest.fixture
def viewer(console: Console) -> TestClient:
    console.write(
        [
            plate_sighting("s1", "B840OK197", T0),
            plate_sighting("s2", "B840OK197", T0 + timedelta(minutes=20), camera_id="yard"),
            plate_sighting("s3", "A123BC77", T0 + timedelta(hours=3)),
            plate_sighting("s4", "A123BC77", T0 + timedelta(days=1, hours=1), camera_id="yard"),
            plate_sighting("old", "A123BC77", T0 - timedelta(days=1)),
        ],
        [plate_alert("a1", "B840OK197", alerted_at=T0), plate_alert("a2", "A123BC77", list_name="vip")],
        [
            plate_visit("v1", "B840OK197", "closed", dwell=timedelta(minutes=20)),
            plate_visit("v2", "A123BC77", "closed", dwell=timedelta(minutes=25), entry_camera="yard"),
            plate_visit("v3", "A123BC77", "closed", dwell=timedelta(hours=3)),
        ],
    )
    stored_raw(console, sightings=[{"name": "h", "camera_id": HOSTILE_CAMERA}])  # past the contracts
    with console.database.begin() as connection:
        connection.execute(
            update(sightings).where(sightings.c.camera_id == HOSTILE_CAMERA).values(last_seen=T0)
        )
        rebuild(connection)
    store_health(console)
    client, _ = signed_in(console.app, "vic")
    return client


def figures(page: str, name: str) -> dict[str, int]:
    section = page.split(f'<section id="report-{name}">', 1)[1].split("</section>", 1)[0]
    return {
        label: int(value) for label, value in re.findall(r"<tr><td>([^<]*)</td><td>(\d+)</td></tr>", section)
    }


def test_a_viewer_sees_every_report_with_its_chart(viewer: TestClient) -> None:
    answer = viewer.get("/reports", params=RANGE)
    assert answer.status_code == 200
    page = answer.text
    assert '<a href="/reports">Reports</a>' in page
    for name in REPORTS:
        assert f'<section id="report-{name}">' in page
        assert f'href="/reports/{name}.csv?' in page
    assert page.count('<svg class="chart"') == len(REPORTS)
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["cache-control"] == "no-store"
    assert " style=" not in page and "<style" not in page
    assert re.findall(r"<script[^>]*>", page) == ['<script src="/static/console.js">']
    assert figures(page, "hourly") == {"2026-03-01T12:00Z": 3, "2026-03-01T15:00Z": 1, "2026-03-02T13:00Z": 1}
    assert figures(page, "alerts") == {"stolen": 1, "vip": 1}
    assert figures(page, "health") == {"2026-03-01T12:00Z": 2, "2026-03-01T13:00Z": 1}
    dwell = figures(page, "dwell")
    assert (dwell["15-30 min"], dwell["2-4 h"], sum(dwell.values())) == (2, 1, 3)


def test_the_page_figures_are_what_the_csv_adds_up_to(viewer: TestClient) -> None:
    page = viewer.get("/reports", params=RANGE).text
    for name, column, value in (("hourly", "hour", "sightings"), ("daily", "day", "sightings")):
        rows = list(csv.DictReader(io.StringIO(viewer.get(f"/reports/{name}.csv", params=RANGE).text)))
        totals: Counter[str] = Counter()
        for row in rows:
            totals[row[column]] += int(row[value])
        assert figures(page, name) == dict(totals)
    plates = list(csv.DictReader(io.StringIO(viewer.get("/reports/plates.csv", params=RANGE).text)))
    assert figures(page, "plates") == {row["day"]: int(row["unique_plates"]) for row in plates}
    dwell = list(csv.DictReader(io.StringIO(viewer.get("/reports/dwell.csv", params=RANGE).text)))
    assert figures(page, "dwell") == {row["dwell"]: int(row["visits"]) for row in dwell}
    top = viewer.get("/reports/top-plates.jsonl", params=RANGE)
    assert top.headers["content-type"] == "application/jsonl"
    assert figures(page, "top-plates") == {
        row["plate"]: row["sightings"] for row in map(orjson.loads, top.text.splitlines())
    }
    health = list(csv.DictReader(io.StringIO(viewer.get("/reports/health.csv", params=RANGE).text)))
    assert [(row["hour"], row["camera_id"], row["frames_published"], row["states"]) for row in health] == [
        ("2026-03-01T12:00Z", "gate", "60", "streaming:2 unreachable:1"),
        ("2026-03-01T13:00Z", "yard", "0", "streaming:1"),
    ]
    assert figures(page, "health") == {row["hour"]: int(row["minutes_up"]) for row in health}


def test_csv_cells_are_escaped_and_json_lines_keep_them_as_they_are(viewer: TestClient) -> None:
    answer = viewer.get("/reports/daily.csv", params=RANGE)
    assert answer.headers["content-disposition"] == 'attachment; filename="daily.csv"'
    assert answer.headers["cache-control"] == "no-store"  # plate data: kept in no cache
    cameras = [row["camera_id"] for row in csv.DictReader(io.StringIO(answer.text))]
    assert "'" + HOSTILE_CAMERA in cameras and HOSTILE_CAMERA not in cameras
    lines = viewer.get("/reports/daily.jsonl", params=RANGE).text.splitlines()
    assert HOSTILE_CAMERA in [orjson.loads(line)["camera_id"] for line in lines]


def test_one_camera_and_bad_ranges(viewer: TestClient) -> None:
    page = viewer.get("/reports", params={**RANGE, "camera": "yard"}).text
    assert figures(page, "daily") == {"2026-03-01": 1, "2026-03-02": 1}
    assert viewer.get("/reports", params={"since": "yesterday"}).status_code == 422
    assert viewer.get("/reports", params={**RANGE, "until": RANGE["since"]}).status_code == 422
    assert viewer.get("/reports/visits.csv", params=RANGE).status_code == 404
    assert viewer.get("/reports/daily.xlsx", params=RANGE).status_code == 404
    assert viewer.get("/reports").status_code == 200  # the last 7 days
    long = {"since": T0.isoformat(), "until": (T0 + timedelta(days=60)).isoformat()}
    page = viewer.get("/reports", params=long).text
    assert "hourly: the hourly report covers at most 31 days" in page
    assert figures(page, "daily") == {"2026-03-01": 4, "2026-03-02": 1}
    assert viewer.get("/reports/hourly.csv", params=long).status_code == 422


def test_signed_out_is_sent_to_sign_in(console: Console) -> None:
    client = TestClient(console.app, follow_redirects=False)
    assert client.get("/reports").status_code in (303, 401)
    assert client.get("/reports/daily.csv").status_code in (303, 401)


# In the page: each report's figures table, and its CSV and JSON Lines files fetched with the
# session's cookie (as its download links would), parsed by the browser itself.
PAGE_FIGURES = """
const done = arguments[arguments.length - 1];
(async () => {
  const query = new URL(document.querySelector('section a[download]').href).search;
  const out = {};
  for (const section of document.querySelectorAll('section[id^="report-"]')) {
    const name = section.id.slice('report-'.length);
    const figures = {};
    for (const row of section.querySelectorAll('table.figures tbody tr')) {
      const [label, value] = row.querySelectorAll('td');
      figures[label.textContent] = Number(value.textContent);
    }
    const csv = await (await fetch(`/reports/${name}.csv${query}`)).text();
    const jsonl = await (await fetch(`/reports/${name}.jsonl${query}`)).text();
    out[name] = {figures, csv, jsonl};
  }
  return out;
})().then(done, error => done({error: String(error)}));
"""


def summed(rows: list[dict], name: str) -> dict[str, int]:
    label, value = CHARTED[name]
    totals: Counter[str] = Counter()
    for row in rows:
        totals[row[label]] += int(row[value])
    return dict(totals)


def png_figures(console: Console, name: str, tmp_path) -> dict[str, int]:
    """The figures `stream-worker report NAME --format png` draws, read back from its PNG."""
    from datetime import datetime

    from PIL import Image

    from stream_worker.store.report_output import run

    chart = tmp_path / f"{name}.png"
    span = ReportRange(datetime.fromisoformat(RANGE["since"]), datetime.fromisoformat(RANGE["until"]))
    assert run(console.settings.resolved_database_url(), name, span, "png", chart, print) == 0
    with Image.open(chart) as image:
        return dict(orjson.loads(image.text["Description"]))


@pytest.mark.integration
def test_the_charts_show_in_chromium_under_the_csp_and_every_file_has_their_figures(
    served, browser, tmp_path
) -> None:
    """The served console (its own thread, the real broker) in a real Chromium: every chart's bars
    are drawn, coloured by console.css, the page raises no CSP violation (the event, and the
    browser's console), and each report's CSV, JSON Lines and PNG hold the figures it shows."""
    pytest.importorskip("matplotlib")
    from console_browser import console_messages, screenshot, sign_in, wait
    from selenium.webdriver.common.by import By

    from .test_console_security import VIOLATIONS

    console, address = served
    console.write(
        [plate_sighting("s1", "B840OK197", T0), plate_sighting("s2", "A123BC77", T0 + timedelta(hours=2))],
        [plate_alert("a1", "B840OK197", alerted_at=T0)],
        [plate_visit("v1", "B840OK197", "closed", dwell=timedelta(minutes=2))],  # the first bucket
    )
    store_health(console)
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": VIOLATIONS})
    sign_in(browser, address, "vic", PASSWORDS["vic"])
    console_messages(browser)  # what signing in wrote is not this page's
    browser.get(f"{address}/reports?{urlencode(RANGE)}")
    charts = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "svg.chart"))
    assert len(charts) == len(REPORTS)
    for chart in charts:
        [bar, *_] = chart.find_elements(By.CSS_SELECTOR, "rect.bar")
        assert bar.size["width"] > 0 and bar.size["height"] > 0
        assert browser.execute_script("return getComputedStyle(arguments[0]).fill", bar) == "rgb(11, 92, 173)"
    screenshot(browser, "reports")
    shown = browser.execute_async_script(PAGE_FIGURES)
    assert set(shown) == set(REPORTS)
    for name, page in shown.items():
        assert page["figures"], name
        assert summed(list(csv.DictReader(io.StringIO(page["csv"]))), name) == page["figures"], name
        assert summed([orjson.loads(line) for line in page["jsonl"].splitlines()], name) == page["figures"], (
            name
        )
        assert png_figures(console, name, tmp_path) == page["figures"], name
    assert shown["health"]["figures"] == {"2026-03-01T12:00Z": 2, "2026-03-01T13:00Z": 1}
    assert browser.execute_script("return window.__violations") == []
    assert [line for line in console_messages(browser) if "Content Security Policy" in line] == []
