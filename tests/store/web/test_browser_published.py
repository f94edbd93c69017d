"""The issue's live-feed line end to end: a sighting published on the sightings topic, read by a
running `stream-worker store` process (its own console), shows up in a signed-in headless
Chromium's live feed within 5 s of being published."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from console_browser import chromium, live_texts, sign_in, wait
from service_processes import ServiceProcess
from store_records import plate_sighting

from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.service_child import http_ok

from .conftest import PASSWORDS
from .test_browser import synthetic_plate

pytestmark = pytest.mark.integration

FEED_WITHIN_S = 5.0
READY_WITHIN_S = 60.0


def test_a_published_sighting_is_in_the_live_feed_within_5_s(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    from datetime import UTC, datetime

    from selenium.webdriver.common.by import By

    topics = (f"{unique_name}-sightings", f"{unique_name}-alerts")
    create_topics(kafka_bootstrap, list(topics), 1)
    args = [
        "--bootstrap-servers", kafka_bootstrap,
        "--group-id", f"{unique_name}-store",
        "--sightings-topic", topics[0],
        "--alerts-topic", topics[1],
        "--data-dir", str(tmp_path / "data"),
        "--users-file", str(users_file),
        "--console-port", "0",
        "--metrics-port", "0",
        "--session-timeout-ms", "6000",
    ]  # fmt: skip
    store = ServiceProcess(args, tmp_path / "store.log", command="store", started="store started").start()
    try:
        started = store.wait_for_log(lambda line: line.get("msg") == "store started", "start")
        address = started["console"].rstrip("/")
        port = started["metrics_port"]
        deadline = time.monotonic() + READY_WITHIN_S
        while not http_ok(f"http://127.0.0.1:{port}/readyz"):  # its partitions assigned
            assert store.is_running() and time.monotonic() < deadline, store.log_tail()
            time.sleep(0.2)
        with chromium() as driver:
            sign_in(driver, address, "ada", PASSWORDS["ada"])
            wait(driver, lambda d: d.find_element(By.ID, "live-state").text == "live")
            sighting = plate_sighting(
                "published", "B840OK197", last_seen=datetime.now(UTC), picture=synthetic_plate("B840OK197")
            )
            producer = Producer({"bootstrap.servers": kafka_bootstrap})
            producer.produce(topics[0], value=sighting.to_json(), key=sighting.camera_id.encode())
            assert producer.flush(10) == 0
            published = time.monotonic()
            wait(driver, lambda d: "B840OK197" in live_texts(d), timeout=FEED_WITHIN_S)
            shown_after_s = time.monotonic() - published
        assert shown_after_s <= FEED_WITHIN_S
    finally:
        if store.is_running():
            store.stop(signal.SIGTERM)
