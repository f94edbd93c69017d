"""Plate pictures through the real broker, Triton and worker: asked by --plate-images or per camera,
absent otherwise (the event then byte-for-byte revision 2: no `image` key in any plate)."""

from __future__ import annotations

import base64
import threading

import cv2
import numpy as np
import pytest
from support import edit_distance

from stream_worker.contracts import PLATE_IMAGE_MAX_BYTES, PlateEvent
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.worker.app import Worker
from stream_worker.worker.camera_rules import CameraRules
from stream_worker.worker.settings import load_settings
from tests.worker.streams import EXPECTED_PLATE, Outputs, Topics, frames_for, produce

pytestmark = pytest.mark.integration


def _car_events(
    kafka_bootstrap: str, topics: Topics, outputs: Outputs, car_jpeg: bytes, workers
) -> list[dict]:
    sent = produce(
        kafka_bootstrap, topics.frames, frames_for(cameras=2, per_camera=2, pattern=[("car", car_jpeg)])
    )
    outputs.wait_for_all(sent, workers)
    events = [record.event for record in outputs.events.records]
    assert len(events) == len(sent) and all(event["plates"] for event in events)
    return events


def _picture(plate: dict) -> np.ndarray:
    jpeg = base64.b64decode(plate["image"], validate=True)
    assert len(jpeg) <= PLATE_IMAGE_MAX_BYTES
    picture = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert picture is not None and picture.shape[0] >= 48
    return picture


def test_with_plate_images_every_plate_carries_its_picture(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg
) -> None:
    worker = start_worker(triton_url, "--plate-images")
    events = _car_events(kafka_bootstrap, topics, outputs, car_jpeg, [worker])
    for event in events:
        assert event["schema_revision"] == 3
        assert PlateEvent.model_validate(event).plates[0].image == event["plates"][0]["image"]
        for plate in event["plates"]:
            _picture(plate)
    van = next(p for e in events for p in e["plates"] if edit_distance(p["text"], EXPECTED_PLATE) <= 1)
    print(f"\nvan's picture in the event: {len(base64.b64decode(van['image']))} bytes")


def test_without_the_flag_events_have_no_picture_and_stay_revision_2(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg
) -> None:
    worker = start_worker(triton_url)
    for record, event in zip(
        outputs.events.records,
        _car_events(kafka_bootstrap, topics, outputs, car_jpeg, [worker]),
        strict=True,
    ):
        assert event["schema_revision"] == 2
        assert all("image" not in plate for plate in event["plates"])
        assert b'"image":"' not in record.value and b'"image":null' not in record.value


def test_the_cameras_settings_decide_which_cameras_get_pictures(
    kafka_bootstrap, triton_url, topics, outputs, unique_name, car_jpeg
) -> None:
    """A camera whose settings ask for pictures gets them; the others' events stay revision 2."""
    settings = load_settings(
        [
            *("--bootstrap-servers", kafka_bootstrap, "--triton-url", triton_url),
            *("--group-id", f"{unique_name}-group", "--input-topic", topics.frames),
            *("--output-topic", topics.plates, "--dlq-topic", topics.dlq, "--metrics-port", "0"),
            *("--session-timeout-ms", "6000", "--triton-timeout-s", "300"),
        ]
    )
    cameras = {"cam-1": CameraSettings(plate_images=True)}
    worker = Worker(settings, camera_rules=CameraRules(cameras.get))
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        events = _car_events(kafka_bootstrap, topics, outputs, car_jpeg, [])
    finally:
        worker.request_stop()
        thread.join(60)
    assert not thread.is_alive()
    for event in events:
        pictured = event["camera_id"] == "cam-1"
        assert event["schema_revision"] == (3 if pictured else 2)
        assert all(("image" in plate) == pictured for plate in event["plates"])
