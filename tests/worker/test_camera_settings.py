"""Camera settings through the real broker, Triton and worker, changed while the worker runs: a mask
over the van's plate drops it (and counts it), a zone over it tags it, removing the settings gives
back the plates of a camera without settings."""

from __future__ import annotations

import threading
import time

import pytest
from support import edit_distance, require

from stream_worker.cameras.store import remove_settings, write_settings
from stream_worker.contracts.cameras import parse_settings
from stream_worker.worker.app import Worker
from stream_worker.worker.settings import load_settings
from tests.worker.streams import EXPECTED_PLATE, Outputs, Sent, Topics, produce

pytestmark = pytest.mark.integration
CAMERA, OTHER = "cam-0", "cam-1"
APPLY_WAIT_S = 30.0  # a change applies within about a second; frames take a while on this CPU


class Cameras:
    """Sends car frames one at a time and returns each one's event."""

    def __init__(self, bootstrap: str, topics: Topics, outputs: Outputs, car_jpeg: bytes) -> None:
        self.bootstrap, self.topics, self.outputs, self.car_jpeg = bootstrap, topics, outputs, car_jpeg
        self.sent = 0

    def event(self, camera: str) -> dict:
        self.sent += 1
        [sent] = produce(
            self.bootstrap, self.topics.frames, [Sent(camera, f"{camera}/{self.sent}", "car", self.car_jpeg)]
        )
        self.outputs.wait_for_all([sent], [])
        return next(
            record.event
            for record in self.outputs.events.records
            if (record.event["source"]["partition"], record.event["source"]["offset"]) == sent.source
        )

    def until(self, camera: str, condition, what: str) -> dict:
        """Events of `camera`'s frames until one meets `condition` (the change has applied)."""
        deadline = time.monotonic() + APPLY_WAIT_S
        while True:
            event = self.event(camera)
            if condition(event):
                return event
            assert time.monotonic() < deadline, f"the worker did not apply {what}: {event['plates']}"


def van(event: dict) -> dict | None:
    return next((p for p in event["plates"] if edit_distance(p["text"], EXPECTED_PLATE) <= 1), None)


def square_around(plate: dict, event: dict, half: float = 0.05) -> list[list[float]]:
    """A normalised square centred on the plate's box."""
    box, size = plate["box"], event["image"]
    x = (box["x1"] + box["x2"]) / 2 / size["width"]
    y = (box["y1"] + box["y2"]) / 2 / size["height"]
    return [[x - half, y - half], [x + half, y - half], [x + half, y + half], [x - half, y + half]]


def test_masks_and_zones_apply_while_the_worker_runs_and_removing_them_restores_the_output(
    kafka_bootstrap, triton_url, topics, outputs, unique_name, car_jpeg
) -> None:
    cameras_topic = f"{unique_name}-cameras"
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
    frames = Cameras(kafka_bootstrap, topics, outputs, car_jpeg)
    masked = lambda: worker.metrics.registry.get_sample_value(  # noqa: E731
        "stream_worker_plates_masked_total", {"camera": CAMERA}
    )
    try:
        before = frames.event(CAMERA)
        plate = van(before)
        assert plate is not None and "zone" not in plate and before["schema_revision"] == 2
        around_van = square_around(plate, before)

        write_settings(kafka_bootstrap, CAMERA, parse_settings({"masks": [around_van]}), cameras_topic)
        hidden = frames.until(CAMERA, lambda e: van(e) is None, "the mask")
        assert [p["text"] for p in hidden["plates"]] == [
            p["text"] for p in before["plates"] if p is not plate
        ], "only the masked plate is dropped"
        assert masked() is not None and masked() >= 1
        assert van(frames.event(OTHER)) is not None, "another camera is not masked"

        zones = {
            "zones": [
                {"name": "kerb", "polygon": [[0, 0], [0.1, 0], [0.1, 0.1]]},
                {"name": "lane", "polygon": around_van},
            ]
        }
        write_settings(kafka_bootstrap, CAMERA, parse_settings(zones), cameras_topic)
        zoned = frames.until(CAMERA, lambda e: van(e) is not None, "the zones instead of the mask")
        assert van(zoned)["zone"] == "lane" and zoned["schema_revision"] == 3
        assert all(p.get("zone") != "kerb" for p in zoned["plates"])

        counted = masked()
        remove_settings(kafka_bootstrap, CAMERA, cameras_topic)
        after = frames.until(CAMERA, lambda e: "zone" not in van(e), "the removal")
        assert after["plates"] == before["plates"] and after["schema_revision"] == 2
        assert masked() == counted
    finally:
        worker.request_stop()
        thread.join(60)
    assert not thread.is_alive()


def _dash_frame() -> tuple[bytes, tuple[float, ...]]:
    """A Romanian dash-camera frame (a PNG named .jpg, sent as a JPEG) and its small plate's box: 73x21
    pixels, missed at the default detector scales (docs/performance.md "Quality by country")."""
    import cv2

    from stream_worker.evaluation.voc import load_voc_labels
    from tests.conftest import weights_dir

    folder = weights_dir().parent / "plates-world" / "ro-scenes"
    require(folder.exists(), f"needs {folder}")
    name = "dayride_type1_001.mp4_t172.jpg"
    (box,) = load_voc_labels(folder)[name].boxes
    image = cv2.imread(str(folder / name), cv2.IMREAD_COLOR)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes(), box


def test_a_dash_cameras_detector_scales_find_its_small_plate_while_the_worker_runs(
    kafka_bootstrap, triton_url, topics, outputs, unique_name, car_jpeg
) -> None:
    frame, box = _dash_frame()
    cameras_topic = f"{unique_name}-cameras"
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
    frames = Cameras(kafka_bootstrap, topics, outputs, frame)

    def small_plate(event: dict) -> bool:
        return any(
            min(p["box"]["x2"], box[2]) - max(p["box"]["x1"], box[0]) > 0.5 * (box[2] - box[0])
            and min(p["box"]["y2"], box[3]) > max(p["box"]["y1"], box[1])
            for p in event["plates"]
        )

    try:
        write_settings(kafka_bootstrap, CAMERA, parse_settings({"region": "eu"}), cameras_topic)
        frames.until(CAMERA, lambda e: not small_plate(e), "the region")
        dash = {"region": "eu", "detector_scales": [1.0, 0.5, 3.0]}
        write_settings(kafka_bootstrap, CAMERA, parse_settings(dash), cameras_topic)
        frames.until(CAMERA, small_plate, "the detector scales")
        assert not small_plate(frames.event(OTHER)), "another camera keeps the default scales"
    finally:
        worker.request_stop()
        thread.join(60)
    assert not thread.is_alive()
