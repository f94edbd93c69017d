"""An admin corrects a read in a real headless Chromium, against the console served by the store's
console thread on the real broker: the sighting's page takes the corrected plate, shows old -> new
with who, the search finds the sighting by the new text, the audit page lists the change and the
record is on the corrections topic."""

from __future__ import annotations

import pytest
from console_browser import sign_in, wait
from store_records import plate_sighting

from stream_worker.contracts import corrections as correction_records
from stream_worker.service.compacted import read_compacted

from .conftest import PASSWORDS

pytestmark = pytest.mark.integration


def test_an_admin_corrects_a_read_in_the_browser(served, browser, kafka_bootstrap: str) -> None:
    from selenium.webdriver.common.by import By

    console, address = served
    misread = plate_sighting("misread", "B840OK197", camera_id="gate-1")
    console.write([misread])
    sign_in(browser, address, "ada", PASSWORDS["ada"])
    browser.get(f"{address}/sightings/{misread.sighting_id}")
    field = wait(browser, lambda d: d.find_element(By.ID, "corrected-text"))
    field.clear()
    field.send_keys("B840CK197")
    browser.find_element(By.ID, "correct").click()
    shown = wait(browser, lambda d: d.find_elements(By.ID, "correction"), timeout=30)
    assert "B840OK197 → B840CK197" in shown[0].text and "by ada" in shown[0].text

    browser.get(f"{address}/search?text=B840CK197")
    rows = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results tbody tr"))
    assert len(rows) == 1 and "B840OK197 → B840CK197" in rows[0].text
    browser.get(f"{address}/audit")
    assert "sighting.correct" in browser.find_element(By.TAG_NAME, "main").text

    topic = console.settings.corrections_topic
    (published,) = read_compacted(kafka_bootstrap, topic, correction_records.decode_record).values.values()
    assert (published.old_text, published.new_text, published.corrected_by) == (
        "B840OK197",
        "B840CK197",
        "ada",
    )
