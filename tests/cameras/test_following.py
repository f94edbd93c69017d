"""`CameraSettingsFollower` on the real local broker: the topic read to its end before the first
frame, changes applied within seconds, a tombstone back to the defaults."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from stream_worker.cameras.following import CameraSettingsFollower
from stream_worker.cameras.store import remove_settings, write_settings
from stream_worker.contracts.cameras import parse_settings

pytestmark = pytest.mark.integration
WAIT_S = 15.0
LEFT_HALF = parse_settings({"masks": [[[0, 0], [0.5, 0], [0.5, 1], [0, 1]]]})
RIGHT_HALF = parse_settings({"masks": [[[0.5, 0], [1, 0], [1, 1], [0.5, 1]]], "plate_images": True})


def wait_for(condition: Callable[[], object], what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < WAIT_S, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - started


def test_follows_the_cameras_topic_live(kafka_bootstrap: str, unique_name: str) -> None:
    write_settings(kafka_bootstrap, "gate-1", LEFT_HALF, unique_name)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(unique_name, key=b"broken", value=b"{not json")
    assert producer.flush(30) == 0
    skipped: list[int] = []
    changed: list[set[str]] = []
    follower = CameraSettingsFollower(
        kafka_bootstrap,
        unique_name,
        on_skipped=lambda: skipped.append(1),
        on_change=changed.append,
        poll_s=0.1,
    )
    assert follower.settings_for("gate-1") is None, "nothing before start"
    follower.start()
    try:
        assert follower.wait_until_caught_up(WAIT_S)
        assert follower.caught_up
        assert follower.settings_for("gate-1") == LEFT_HALF
        assert follower.settings_for("broken") is None and skipped == [1]
        assert follower.settings_for("other") is None
        assert dict(follower.settings) == {"gate-1": LEFT_HALF}

        write_settings(kafka_bootstrap, "gate-1", RIGHT_HALF, unique_name)
        assert wait_for(lambda: follower.settings_for("gate-1") == RIGHT_HALF, "the new settings") < 5

        remove_settings(kafka_bootstrap, "gate-1", unique_name)
        wait_for(lambda: follower.settings_for("gate-1") is None, "the tombstone")
        assert {"gate-1"} in changed
    finally:
        follower.close()


def test_caught_up_on_a_topic_that_does_not_exist_yet(kafka_bootstrap: str, unique_name: str) -> None:
    follower = CameraSettingsFollower(kafka_bootstrap, unique_name, poll_s=0.1).start()
    try:
        assert follower.wait_until_caught_up(WAIT_S)
        assert dict(follower.settings) == {}
    finally:
        follower.close()
