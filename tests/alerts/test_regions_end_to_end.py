"""Regions end to end: the real local broker and Triton, `stream-worker run`,
`sightings` and `alerts` as their own processes. Camera gate-1 has region `us` and sees three US
plates (labelled crops of ../shared/plates-world/us-crops pasted at a plate's size into a plain
frame, made here at run time); camera gate-2, without a region, sees the sample van. The US plates are
read by the global recognizer through the US formats and say so (`country` us); the van's events are
today's (LPRNet's text, no new field, revision 2); each US pass is a sighting that passed the plate
gate; the US plate on the watch list raises its alert."""

from __future__ import annotations

import csv
import time

import cv2
import numpy as np
import orjson
import pytest
from pipeline_services import MISREAD, PARTITIONS, Frame, alerts, entry, produce_frames, start_pipeline
from service_processes import WAIT_S, TopicReader

from stream_worker.cameras.store import write_settings
from stream_worker.contracts import PlateEvent, PlateSighting
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.cameras import parse_settings
from stream_worker.watchlists.topic import write_changes
from tests.conftest import weights_dir

pytestmark = pytest.mark.integration

US_CROPS = weights_dir().parent / "plates-world" / "us-crops"
# Crops whose plate the detector finds at this size in a plain frame and the US formats read exactly
# (each of a different format); the first is on the watch list, with letters LPRNet never writes.
US_PLATES = {"ak1165.png": "FUW999", "az443.png": "AST3087", "ar127.png": "991LNJ"}
WATCHED = "FUW999"
PLATE_WIDTH = 240  # pixels, in a 1280x720 frame: a plate a few metres from a gate camera
FRAMES_PER_PASS = 3
PASS_SPACING_S = 30.0  # capture time between passes: far more than the sightings' and alerts' gaps
PLATE_KEYS_BEFORE_REGIONS = {
    "text",
    "confidence",
    "box",
    "detection_score",
    "format_valid",
    "corners",
    "character_confidences",
    "layout",
}


def pasted_plate(file: str) -> bytes:
    """A 1280x720 grey JPEG with the crop pasted at `PLATE_WIDTH` (made here, never stored)."""
    with (US_CROPS / "labels.csv").open() as labels:
        assert {row["file"]: row["plate"] for row in csv.DictReader(labels)}[file] == US_PLATES[file]
    crop = cv2.imread(str(US_CROPS / file))
    height = round(crop.shape[0] * PLATE_WIDTH / crop.shape[1])
    frame = np.full((720, 1280, 3), 120, np.uint8)
    frame[400 : 400 + height, 560 : 560 + PLATE_WIDTH] = cv2.resize(
        crop, (PLATE_WIDTH, height), interpolation=cv2.INTER_AREA
    )
    return cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()


def test_a_us_camera_reads_us_plates_beside_an_unchanged_russian_one(
    kafka_bootstrap,
    triton_url,
    pipeline_topics,
    start_service,
    car_jpeg,
    unique_name,
):
    topics = pipeline_topics
    cameras_topic = f"{unique_name}-cameras"
    write_settings(kafka_bootstrap, "gate-1", parse_settings({"region": "us"}), cameras_topic)
    write_changes(kafka_bootstrap, topics.watchlist, [entry(WATCHED, "stolen")])
    services = start_pipeline(start_service, triton_url, topics, 5.0, 4.0, cameras_topic)
    worker, sightings_service, alerts_service = services
    for service in services:
        service.wait_ready(WAIT_S)

    base_ms = int(time.time() * 1000) - 600_000
    us = [
        Frame("gate-1", f"gate-1/{n}/{k}", base_ms + int((n * PASS_SPACING_S + k * 0.2) * 1000), image)
        for n, image in enumerate(pasted_plate(file) for file in US_PLATES)
        for k in range(FRAMES_PER_PASS)
    ]
    van = [Frame("gate-2", f"gate-2/{k}", base_ms + k * 200, car_jpeg) for k in range(FRAMES_PER_PASS)]
    produce_frames(kafka_bootstrap, topics.frames, us + van)

    plates = TopicReader(kafka_bootstrap, topics.plates, PARTITIONS)
    sightings_out = TopicReader(kafka_bootstrap, topics.sightings, PARTITIONS)
    alerts_out = TopicReader(kafka_bootstrap, topics.alerts, PARTITIONS)
    try:
        deadline = time.monotonic() + WAIT_S
        # Every frame's event, a sighting per pass (three US, one van) and the watched plate's alert.
        while (
            len({PlateEvent.model_validate_json(r.value).frame_id for r in plates.records}) < len(us + van)
            or len(sightings_out.records) < len(US_PLATES) + 1
            or not alerts_out.records
        ):
            for service in services:
                assert service.is_running(), f"{service.command} exited:\n{service.log_tail()}"
            assert time.monotonic() < deadline, (
                f"{len(plates.records)} events, {len(sightings_out.records)} sightings, "
                f"{len(alerts_out.records)} alerts:\n"
                + "\n".join(f"--- {s.command}\n{s.log_tail()}" for s in services)
            )
            plates.poll(0.2)
            sightings_out.poll(0.2)
            alerts_out.poll(0.2)
        alerts_out.poll(2.0)
    finally:
        plates.close()
        sightings_out.close()
        alerts_out.close()

    events: dict[str, tuple[PlateEvent, dict]] = {}
    for record in plates.records:
        event = PlateEvent.model_validate_json(record.value)
        events.setdefault(event.frame_id, (event, orjson.loads(record.value)))
    for n, text in enumerate(US_PLATES.values()):
        for k in range(FRAMES_PER_PASS):
            event, raw = events[f"gate-1/{n}/{k}"]
            print(f"\n{event.frame_id}: {[(p.text, p.country, p.plate_format) for p in event.plates]}")
            (plate,) = event.plates
            assert (plate.text, plate.country, plate.recognizer, plate.format_valid) == (
                text,
                "us",
                "global",
                True,
            )
            assert plate.plate_format and event.schema_revision == 5
    for frame in van:  # the camera without a region: today's event
        event, raw = events[frame.frame_id]
        assert event.schema_revision == 2 and [p.text for p in event.plates] == [MISREAD]
        assert set(raw["plates"][0]) == PLATE_KEYS_BEFORE_REGIONS

    sightings = [PlateSighting.model_validate_json(record.value) for record in sightings_out.records]
    us_sightings = sorted((s for s in sightings if s.camera_id == "gate-1"), key=lambda s: s.first_seen)
    assert [(s.text, s.format_valid, s.country, s.recognizer) for s in us_sightings] == [
        (text, True, "us", "global") for text in US_PLATES.values()
    ]
    (van_sighting,) = [s for s in sightings if s.camera_id == "gate-2"]
    assert van_sighting.text == MISREAD and van_sighting.country is None and van_sighting.format_valid

    got = alerts(alerts_out)
    assert {(a.camera_id, a.plate, a.list, a.match_kind) for a in got} == {
        ("gate-1", WATCHED, "stolen", MatchKind.EXACT)
    }
    assert all((a.country, a.recognizer, a.frame_id) == ("us", "global", "gate-1/0/0") for a in got)

    for service in (alerts_service, sightings_service, worker):
        assert service.stop() == 0, service.log_tail()
