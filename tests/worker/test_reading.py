"""A frame's plates read through its camera's region (worker/reading.py) into the event's fields."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import orjson
import pytest
from worker.test_events import CAR, MODEL, NOW, frame

from stream_worker.cameras.regions import CameraRegions
from stream_worker.contracts.cameras import parse_settings
from stream_worker.contracts.plate_formats import region
from stream_worker.recognition import GLOBAL
from stream_worker.worker.events import build_event
from stream_worker.worker.reading import read_in_region

GLOBAL_CLASSES = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_"


def global_probs(text: str, sure: float = 0.9) -> np.ndarray:
    """global_ocr's [9 slots, 37 classes] for `text`, the empty slots `_`."""
    probs = np.full((9, len(GLOBAL_CLASSES)), (1 - sure) / (len(GLOBAL_CLASSES) - 1), np.float32)
    for slot, char in enumerate(text.ljust(9, "_")):
        probs[slot, GLOBAL_CLASSES.index(char)] = sure
    return probs


US_PLATE = replace(CAR.plates[0], text="7A8C123", recognizers=(GLOBAL,), global_probs=global_probs("7ABC123"))


def event_json(plates, readings) -> dict:
    result = replace(CAR, plates=tuple(plates))
    kept = [(plate, None) for plate in plates]
    return orjson.loads(build_event(frame(), result, MODEL, NOW, 10.25, kept, readings).to_json())


def test_without_a_region_the_event_is_byte_for_byte_todays():
    readings = read_in_region(None, CAR.plates)
    assert readings == [None]
    result = build_event(frame(), CAR, MODEL, NOW, 10.25, [(CAR.plates[0], None)], readings)
    assert result.to_json() == build_event(frame(), CAR, MODEL, NOW, 10.25).to_json()


def test_a_us_plate_is_read_through_the_us_formats_and_says_so():
    event = event_json([US_PLATE, CAR.plates[0]], [*read_in_region(region("us"), [US_PLATE]), None])
    us, russian = event["plates"]
    assert event["schema_revision"] == 5
    assert (us["text"], us["recognizer"], us["country"], us["format_valid"]) == (
        "7ABC123",
        "global",
        "us",
        True,
    )
    assert us["plate_format"] and len(us["character_confidences"]) == 7
    assert {"recognizer", "country", "plate_format"}.isdisjoint(russian)  # no region: no region fields


def test_a_plate_without_its_recognizers_output_keeps_its_plain_text_counted_and_logged(caplog):
    unread = []
    broken = replace(US_PLATE, global_probs=None)
    with caplog.at_level(logging.WARNING):
        (reading,) = read_in_region(region("us"), [broken], lambda: unread.append(1))
    assert unread == [1] and "not readable" in caplog.text
    plate = event_json([broken], [reading])["plates"][0]
    assert (plate["text"], plate["format_valid"], plate["recognizer"]) == ("7A8C123", False, "global")
    assert "country" not in plate


@pytest.mark.parametrize("code", [None, "ru"])
def test_the_default_region_is_no_region(code):
    settings = parse_settings({} if code is None else {"region": code})
    assert CameraRegions().of("cam", settings) is None and CameraRegions().of("cam", None) is None


def test_a_region_unknown_to_this_version_is_read_as_auto_counted_and_logged_once(caplog):
    unknown = []
    regions = CameraRegions(lambda: unknown.append(1))
    settings = parse_settings({"region": "xx"}, keep_unknown_region=True)
    with caplog.at_level(logging.WARNING):
        first, second = regions.of("cam", settings), regions.of("cam", settings)
    assert first is not None and first.code == second.code == "auto"
    assert len(unknown) == 2 and caplog.text.count("unknown to this version") == 1
