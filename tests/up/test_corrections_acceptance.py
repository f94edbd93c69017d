"""The operator's review loop for real: `stream-worker up` (broker, Triton, every service, the
store) reading an RTSP camera (GStreamer's server looping a clip of ../shared/videos), an admin in
a real headless Chromium.

The admin corrects the camera's first stored read, on its sighting page, to a plate on the watch
list that the clip never shows: the sighting is found by the new text, the audit log lists the
correction, its record is on the corrections topic, and the alerts service raises that plate's
alert once (origin correction, shown on the alerts page; nothing more in the seconds after). Then
`store corrections export` writes the reviewed crop and its text, and `stream-worker eval` scores
the recognizer on it with `up`'s Triton.

One test (minutes on two shared cores): `up` and a camera are slow to start, and each step needs
the one before.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from stream_worker.contracts import corrections as correction_records
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.rtsp import Mount
from stream_worker.service.compacted import read_compacted
from tests.up.test_up import REPO_ROOT, STORED_TIMEOUT_S, Up, _wait, admin_password

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

WATCHED = "E001KX77"  # on the watch list; far from every clip's plate, so only the correction alerts
CAMERA = "gate-review"
CLI_TIMEOUT_S = 120.0
QUIET_S = 8.0  # how long no second alert must come


def cli(up: Up, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STREAM_WORKER_BOOTSTRAP_SERVERS": up.status()["bootstrap_servers"],
        "XDG_STATE_HOME": str(up.state_home),
    }
    return subprocess.run(
        [sys.executable, "-m", "stream_worker", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip


def rows(up: Up, query: str, *parameters: object) -> list[tuple]:
    database = up.data_dir / "history.db"
    if not database.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)) as db:
            return db.execute(query, parameters).fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []


@pytest.fixture
def up(tmp_path: Path, prepared_model_repository: Path) -> Iterator[Up]:
    stack = Up(tmp_path / "data", free_port(), free_port())
    try:
        stack.wait_running()
        stack.admin_password = admin_password(stack.output())
        yield stack
    finally:
        stack.close()


def test_a_read_corrected_in_the_browser_is_found_audited_published_alerted_once_and_scored(
    up: Up, rtsp_servers, video_clips: list[Path], tmp_path: Path
) -> None:
    import console_browser
    from selenium.webdriver.common.by import By

    clip = next(path for path in video_clips if "van" in path.stem)
    rtsp = rtsp_servers([Mount(CAMERA, clip, loop=True)])
    assert cli(up, "watchlist", "add", WATCHED, "--list", "stolen").returncode == 0
    settings = tmp_path / "camera.yaml"
    settings.write_text(f"source:\n  url: {rtsp.url(CAMERA)}\n  fps: 4\n  rtsp_transport: tcp\n")
    done = cli(up, "cameras", "set", CAMERA, "--file", str(settings))
    assert done.returncode == 0, done.stderr

    query = "SELECT sighting_id, text FROM sightings JOIN pictures USING (sighting_id) WHERE camera_id = ?"
    found = _wait(lambda: rows(up, query, CAMERA), 300.0, f"a sighting of {CAMERA} with its picture", up)
    sighting_id, read_text = found[0]  # type: ignore[index]
    assert read_text != WATCHED

    console_url = up.status()["console_url"].rstrip("/")
    assert up.admin_password, up.output()
    with console_browser.chromium() as driver:
        console_browser.sign_in(driver, console_url, "admin", up.admin_password)
        driver.get(f"{console_url}/sightings/{sighting_id}")
        field = console_browser.wait(driver, lambda d: d.find_element(By.ID, "corrected-text"))
        field.clear()
        field.send_keys(WATCHED)
        driver.find_element(By.ID, "correct").click()
        shown = console_browser.wait(driver, lambda d: d.find_elements(By.ID, "correction"), timeout=30)
        assert f"{read_text} → {WATCHED}" in shown[0].text and "by admin" in shown[0].text

        driver.get(f"{console_url}/search?text={WATCHED}")
        results = console_browser.wait(
            driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#results tbody tr")
        )
        assert len(results) == 1 and f"{read_text} → {WATCHED}" in results[0].text
        driver.get(f"{console_url}/audit")
        assert "sighting.correct" in driver.find_element(By.TAG_NAME, "main").text

        bootstrap = up.status()["bootstrap_servers"]
        published = read_compacted(bootstrap, "corrections", correction_records.decode_record).values
        record = published[sighting_id]
        assert (record.old_text, record.new_text, record.corrected_by) == (read_text, WATCHED, "admin")

        alerted = "SELECT alert_id, origin FROM alerts WHERE plate = ?"
        _wait(lambda: rows(up, alerted, WATCHED), STORED_TIMEOUT_S, f"the alert of {WATCHED} stored", up)
        time.sleep(QUIET_S)
        assert [origin for _, origin in rows(up, alerted, WATCHED)] == ["correction"]
        driver.get(f"{console_url}/alerts")
        row = console_browser.wait(
            driver, lambda d: d.find_elements(By.CSS_SELECTOR, "tr[data-alert] .from-correction")
        )
        assert row[0].text == "raised by a correction"

    reviewed = tmp_path / "ru-reviewed"
    exported = cli(up, "store", "corrections", "export", "--out", str(reviewed), "--camera", CAMERA)
    assert exported.returncode == 0, exported.stderr
    assert "wrote 1 labelled crops" in exported.stdout
    report = tmp_path / "report.json"
    scored = cli(up, "eval", str(reviewed), "--url", up.status()["triton_url"], "--report", str(report))
    assert scored.returncode == 0, scored.stdout + scored.stderr
    totals = orjson.loads(report.read_bytes())["totals"]
    assert (totals["images"], totals["texts_labelled"]) == (1, 1)
    # Scored against the operator's text, which the clip never shows: not one exact read.
    assert totals["texts_exact"] == 0
