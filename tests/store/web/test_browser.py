"""The console in a real headless Chromium (Debian's chromium through its chromedriver, selenium),
served by the store's own console thread over a real SQLite store and the real broker: sign in; a
sighting stored appears in the live feed within 5 s; a fuzzy search for B840CK197 finds a stored
B840OK197 with its picture; a watch-list entry added in the page (with its own overstay limit) is
on the broker's watch-list topic; a viewer has no button to change the watch list and the API
answers 403; an admin sets a notification target in the page's textarea, sends it a test and
removes it (confirmed).

The plate pictures are synthetic (drawn here), so the screenshots taken when CONSOLE_SCREENSHOTS
names a folder hold no photo of ../shared."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import console_browser
import numpy as np
import pytest
from console_browser import picture_loaded, screenshot, wait
from store_records import plate_alert, plate_sighting

from stream_worker.watchlists.topic import read_watchlist

from .conftest import PASSWORDS

pytestmark = pytest.mark.integration


def synthetic_plate(text: str) -> bytes:
    """A drawn plate (white, black frame and letters) as JPEG: not a photo."""
    import cv2

    image = np.full((60, 260, 3), 245, np.uint8)
    cv2.rectangle(image, (2, 2), (257, 57), (20, 20, 20), 3)
    cv2.putText(image, text, (12, 44), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (15, 15, 15), 3, cv2.LINE_AA)
    ok, jpeg = cv2.imencode(".jpg", image)
    assert ok
    return jpeg.tobytes()


def sign_in(driver, address: str, name: str) -> None:
    console_browser.sign_in(driver, address, name, PASSWORDS[name])


def test_a_stored_sighting_appears_in_the_live_feed_and_fuzzy_search_finds_it(served, browser) -> None:
    from selenium.webdriver.common.by import By

    console, address = served
    sign_in(browser, address, "ada")
    wait(browser, lambda d: d.find_element(By.ID, "live-state").text == "live")
    now = datetime.now(UTC)
    console.write(
        [
            plate_sighting(
                "live-1", "B840OK197", last_seen=now, picture=synthetic_plate("B840OK197"), zone="lane-1"
            )
        ],
        [plate_alert("live-a1", "B840OK197", alerted_at=now, sighting="live-1")],
    )
    rows = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#live-sightings li"))
    assert "B840OK197" in rows[0].text
    assert "B840OK197" in wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#live-alerts li"))[0].text
    wait(browser, lambda d: picture_loaded(d, rows[0].find_element(By.TAG_NAME, "img")))
    console.write(
        [plate_sighting("live-2", "A123BC77", last_seen=now + timedelta(seconds=1), camera_id="yard")]
    )
    wait(browser, lambda d: console_browser.live_texts(d) == ["A123BC77", "B840OK197"])
    assert console_browser.live_texts(browser, "alerts") == ["B840OK197"]
    screenshot(browser, "live")

    browser.find_element(By.LINK_TEXT, "Search").click()
    browser.find_element(By.ID, "text").send_keys("B840CK197")
    browser.find_element(By.ID, "fuzzy").click()
    browser.find_element(By.ID, "search").click()
    result = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results tbody tr"))
    assert len(result) == 1 and "B840OK197" in result[0].text
    wait(browser, lambda d: picture_loaded(d, result[0].find_element(By.TAG_NAME, "img")))
    screenshot(browser, "search")
    result[0].find_element(By.LINK_TEXT, "B840OK197").click()
    wait(browser, lambda d: d.find_elements(By.ID, "picture"))
    assert "lane-1" in browser.find_element(By.TAG_NAME, "main").text


def test_an_admin_adds_a_watch_list_entry_that_reaches_the_topic(
    served, browser, kafka_bootstrap: str
) -> None:
    from selenium.webdriver.common.by import By

    console, address = served
    sign_in(browser, address, "ada")
    browser.get(address + "/watchlist")
    browser.find_element(By.ID, "plate").send_keys(
        "\u0432840\u0441\u043a197"
    )  # Cyrillic, lower case: normalised
    browser.find_element(By.ID, "list").clear()
    browser.find_element(By.ID, "list").send_keys("stolen")
    browser.find_element(By.ID, "overstay_s").send_keys("7200")
    browser.find_element(By.ID, "add").click()
    wait(browser, lambda d: "Added B840CK197 to stolen" in d.page_source, timeout=15)
    row = browser.find_element(By.CSS_SELECTOR, '#watchlist tr[data-plate="B840CK197"]')
    assert row.find_element(By.CLASS_NAME, "overstay-limit").text == "7200 s"
    screenshot(browser, "watchlist")
    snapshot = read_watchlist(kafka_bootstrap, console.settings.watchlist_topic)
    assert (snapshot.values["B840CK197"].list, snapshot.values["B840CK197"].overstay_s) == ("stolen", 7200)
    browser.find_element(By.CSS_SELECTOR, '#watchlist tr[data-plate="B840CK197"] button.remove').click()
    wait(browser, lambda d: "Removed B840CK197" in d.page_source, timeout=15)
    assert "B840CK197" not in read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values
    browser.get(address + "/audit")
    audit = browser.find_element(By.ID, "audit").text
    assert "watchlist.add" in audit and "watchlist.remove" in audit and "ada" in audit


def test_a_viewer_cannot_change_the_watch_list(served, browser, kafka_bootstrap: str) -> None:
    from selenium.webdriver.common.by import By

    console, address = served
    sign_in(browser, address, "vic")
    browser.get(address + "/watchlist")
    wait(browser, lambda d: d.find_elements(By.ID, "watchlist"))
    assert not browser.find_elements(By.ID, "add-entry") and not browser.find_elements(
        By.CSS_SELECTOR, "button.remove"
    )
    status = browser.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const token = document.querySelector('meta[name=csrf-token]').content;
        fetch('/api/watchlist', {method: 'POST',
          headers: {'content-type': 'application/json', 'x-csrf-token': token},
          body: JSON.stringify({plate: 'B840CK197', list: 'stolen'})})
          .then(r => done(r.status), e => done(String(e)));"""
    )
    assert status == 403
    assert read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values == {}


def test_masks_and_zones_drawn_on_the_camera_page_are_saved(served, browser, kafka_bootstrap: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from stream_worker.cameras.store import read_cameras

    console, address = served
    sign_in(browser, address, "ada")
    browser.get(address + "/cameras/gate")
    canvas = browser.find_element(By.ID, "canvas")
    browser.find_element(By.ID, "new-mask").click()
    width, height = canvas.size["width"], canvas.size["height"]
    for x, y in ((0.1, 0.1), (0.4, 0.1), (0.4, 0.3)):
        ActionChains(browser).move_to_element_with_offset(
            canvas, int((x - 0.5) * width), int((y - 0.5) * height)
        ).click().perform()
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#canvas polygon.mask")) == 1)
    screenshot(browser, "camera")
    browser.find_element(By.ID, "save").click()
    wait(browser, lambda d: "Saved the settings of gate" in d.page_source, timeout=15)
    [mask] = read_cameras(kafka_bootstrap, console.settings.cameras_topic).values["gate"].masks
    assert len(mask) == 3 and abs(mask[0][0] - 0.1) < 0.03 and abs(mask[2][1] - 0.3) < 0.03


def test_an_admin_sets_tests_and_removes_a_notification_target_in_the_page(
    served, browser, kafka_bootstrap: str
) -> None:
    from selenium.webdriver.common.by import By

    from stream_worker.contracts.notify import decode_record
    from stream_worker.service.compacted import read_compacted

    console, address = served

    def targets() -> dict:
        return dict(
            read_compacted(kafka_bootstrap, console.settings.notify_targets_topic, decode_record).values
        )

    sign_in(browser, address, "ada")
    browser.get(address + "/notifications")
    browser.find_element(By.ID, "target-name").send_keys("gate")
    browser.find_element(By.ID, "target-text").send_keys(
        "type: webhook\nurl: https://hooks.example.com/gate\nsecret: ${GATE_SECRET}\n"
    )
    browser.find_element(By.ID, "save-target").click()
    wait(browser, lambda d: "Saved the target gate." in d.page_source, timeout=15)
    assert targets()["gate"].secret == "${GATE_SECRET}"
    row = '#targets tr[data-target="gate"]'
    browser.find_element(By.CSS_SELECTOR, f"{row} button.test").click()
    wait(browser, lambda d: "is on its way to gate" in d.page_source, timeout=15)
    browser.find_element(By.CSS_SELECTOR, f"{row} button.remove").click()
    browser.switch_to.alert.accept()  # the form's data-confirm (console.js)
    wait(browser, lambda d: "Removed the target gate." in d.page_source, timeout=15)
    assert targets() == {}
    browser.get(address + "/audit")
    audit = browser.find_element(By.ID, "audit").text
    assert all(
        action in audit for action in ("notify.target.set", "notify.target.test", "notify.target.remove")
    )
