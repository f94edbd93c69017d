"""Motion gating through the real broker, Triton and worker: a camera whose settings ask for it
sends a still scene, then the van moving; the still frames' events say they were not examined (and
Triton never saw them), the first frame and the moving ones are read."""

from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest
from confluent_kafka import Producer
from support import edit_distance

from stream_worker.cameras.store import write_settings
from stream_worker.contracts.cameras import parse_settings
from stream_worker.worker.app import Worker
from stream_worker.worker.settings import load_settings
from tests.worker.streams import EXPECTED_PLATE, Outputs, Sent, Topics

pytestmark = pytest.mark.integration
CAMERA = "cam-0"
T0_MS = 1_738_324_800_000
STILL, MOVING = 6, 4
PERIOD_MS = 250


def shifted(car_jpeg: bytes, dx: int) -> bytes:
    """The car photo moved `dx` pixels to the right (the van driving), edge repeated."""
    image = cv2.imdecode(np.frombuffer(car_jpeg, np.uint8), cv2.IMREAD_COLOR)
    moved = np.concatenate([np.repeat(image[:, :1], dx, axis=1), image[:, : image.shape[1] - dx]], axis=1)
    return cv2.imencode(".jpg", moved, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()


def produce_in_order(bootstrap: str, topic: str, jpegs: list[bytes]) -> list[Sent]:
    """One camera's frames to one partition, `PERIOD_MS` apart by their captured_at."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    sent = [Sent(CAMERA, f"{CAMERA}/{i}", "car", jpeg) for i, jpeg in enumerate(jpegs)]
    for i, frame in enumerate(sent):

        def landed(error, message, frame=frame):
            assert error is None, error
            frame.source = (message.partition(), message.offset())

        headers = [
            ("frame_id", frame.frame_id.encode()),
            ("captured_at", str(T0_MS + i * PERIOD_MS).encode()),
        ]
        producer.produce(
            topic, frame.value, CAMERA.encode(), partition=0, headers=headers, on_delivery=landed
        )
    assert producer.flush(60) == 0
    return sent


def test_still_frames_are_not_examined_and_moving_ones_are(
    kafka_bootstrap, triton_url, topics: Topics, outputs: Outputs, unique_name, car_jpeg
) -> None:
    cameras_topic = f"{unique_name}-cameras"
    motion = {"motion": {"post_roll_s": 0.0, "heartbeat_s": 60.0}}
    write_settings(kafka_bootstrap, CAMERA, parse_settings(motion), cameras_topic)
    settings = load_settings(
        [
            *("--bootstrap-servers", kafka_bootstrap, "--triton-url", triton_url),
            *("--group-id", f"{unique_name}-group", "--input-topic", topics.frames),
            *("--output-topic", topics.plates, "--dlq-topic", topics.dlq, "--metrics-port", "0"),
            *("--cameras-topic", cameras_topic, "--session-timeout-ms", "6000", "--triton-timeout-s", "300"),
        ]
    )
    worker = Worker(settings)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        jpegs = [car_jpeg] * STILL + [shifted(car_jpeg, 12 * (k + 1)) for k in range(MOVING)]
        sent = produce_in_order(kafka_bootstrap, topics.frames, jpegs)
        outputs.wait_for_all(sent, [])
        by_source = {
            (r.event["source"]["partition"], r.event["source"]["offset"]): r.event
            for r in outputs.events.records
        }
        events = [by_source[frame.source] for frame in sent]
        not_examined = worker.metrics.registry.get_sample_value(
            "stream_worker_frames_not_examined_total", {"camera": CAMERA}
        )
    finally:
        worker.request_stop()
        thread.join(60)
    assert not thread.is_alive()
    assert outputs.dlq.records == []

    def read_van(event: dict) -> bool:
        return any(edit_distance(p["text"], EXPECTED_PLATE) <= 1 for p in event["plates"])

    # With one still frame in two passed over (gating.STATIC_STRIDE), frame 6, the first moving
    # one, is held and examined as the pre-roll of frame 7's motion; 1 to 5 are decided static.
    first, still, moving = events[0], events[1:STILL], events[STILL:]
    assert "examined" not in first and first["schema_revision"] in (2, 3) and read_van(first)
    for event in still:
        assert event["examined"] is False and event["plates"] == [] and event["schema_revision"] == 4
        assert event["image"] == first["image"] and event["captured_at"] is not None
    for event in moving:
        assert "examined" not in event
    assert sum(read_van(event) for event in moving) >= MOVING - 1
    assert not_examined == STILL - 1
