"""Driving the store's console in a real headless Chromium (Debian's chromium and chromedriver,
selenium), for the console's browser tests and the end-to-end ones (`up`, the demo): importable, as
pytest's pythonpath has tests/. Explicit waits only, no sleeps."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support import require

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT_S = 5.0


def chromium_available() -> bool:
    return bool(shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER))


@contextmanager
def chromium(width: int = 1100, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver, quit on exit; the test skipped where Chromium is not
    installed (failed under CI)."""
    require(chromium_available(), "Chromium and its chromedriver are not installed (scripts/test-servers.sh)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console_messages()
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, condition: Callable[[Any], Any], timeout: float = WAIT_S) -> Any:
    """What `condition(driver)` returns once truthy; TimeoutException after `timeout` s."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)


def sign_in(driver: Any, address: str, name: str, password: str) -> None:
    """Sign in at the console `address` (http://host:port) and wait for the live feed page."""
    from selenium.webdriver.common.by import By

    driver.get(address.rstrip("/") + "/")
    wait(driver, lambda d: "/login" in d.current_url)
    driver.find_element(By.ID, "username").send_keys(name)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "sign-in").click()
    wait(driver, lambda d: d.find_elements(By.ID, "live-sightings"))


def live_texts(driver: Any, kind: str = "sightings") -> list[str]:
    """The plates in the live feed's `sightings` or `alerts`, newest first."""
    from selenium.webdriver.common.by import By

    return [
        item.find_element(By.CLASS_NAME, "text").text
        for item in driver.find_elements(By.CSS_SELECTOR, f"#live-{kind} li")
    ]


def console_messages(driver: Any) -> list[str]:
    """What the page wrote to the browser's console since last asked (CSP violations included)."""
    return [f"{entry['level']} {entry['message']}" for entry in driver.get_log("browser")]


def picture_loaded(driver: Any, element: Any) -> bool:
    return bool(
        driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", element)
    )


def screenshot(driver: Any, name: str) -> None:
    """Saved as NAME.png in the folder CONSOLE_SCREENSHOTS names, if it is set (README pictures:
    take them only where no picture derives from ../shared)."""
    folder = os.environ.get("CONSOLE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        path = Path(folder) / f"{name}.png"
        driver.save_screenshot(str(path))
        small_png(path)


def small_png(path: Path, colours: int = 64) -> None:
    """The page's few flat colours as a palette: a docs picture of a few tens of KB, not 60-80."""
    from PIL import Image

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
    palette.save(path, optimize=True)
