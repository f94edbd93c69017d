"""FrameResult -> PlateEvent or dead letter: ids, rounding, plate format, DLQ headers."""

from __future__ import annotations

import base64
import uuid
from dataclasses import replace
from datetime import UTC, datetime

import orjson
import pytest

from stream_worker.contracts import ErrorReason, ErrorStage, ModelInfo, PlateEvent
from stream_worker.recognition import FrameResult, Plate
from stream_worker.worker.events import build_event as _build_event
from stream_worker.worker.events import (
    dead_letter_record,
    event_id,
    event_record,
    format_valid,
    not_examined_event,
    rejection_for,
)
from stream_worker.worker.validate import Frame, InputRecord, Rejection

MODEL = ModelInfo(name="plate_recognition", version="1")
NOW = datetime(2025, 2, 1, 8, 30, tzinfo=UTC)


def frame(offset=11, partition=1, received_at=10.0) -> Frame:
    headers = [("frame_id", b"f1")]
    record = InputRecord("frames", partition, offset, b"cam-1", b"\xff\xd8jpeg", headers, received_at)
    return Frame(record, "cam-1", "f1", datetime(2025, 2, 1, 8, tzinfo=UTC), epoch=1)


CAR = FrameResult(
    status="ok",
    width=780,
    height=439,
    plates=(
        Plate(
            "B840CK197",
            0.85633778572,
            (90.18751, 329.0625, 134.0625, 343.6875),
            0.964522659,
            corners=((90.18751, 330.5), (134.0625, 329.0625), (133.9, 343.6875), (90.5, 342.111)),
            character_confidences=(0.99, 0.9812345, 0.97, 0.96, 0.85633778572, 0.95, 0.94, 0.93, 0.92),
            layout="single_row",
        ),
    ),
)


def build_event(f: Frame, result: FrameResult, now_monotonic: float = 10.25) -> PlateEvent:
    return _build_event(f, result, MODEL, NOW, now_monotonic)


def test_event_fields():
    event = build_event(frame(), CAR)
    assert event.schema_version == 1
    assert event.event_id == event_id("frames", 1, 11)
    assert (event.camera_id, event.frame_id) == ("cam-1", "f1")
    assert event.source.model_dump() == {"topic": "frames", "partition": 1, "offset": 11}
    assert (event.image.width, event.image.height) == (780, 439)
    assert event.processed_at == NOW
    assert event.latency_ms == 250.0
    assert event.model == MODEL
    [plate] = event.plates
    assert plate.text == "B840CK197"
    assert plate.confidence == 0.8563
    assert plate.detection_score == 0.9645
    assert plate.box.model_dump() == {"x1": 90.19, "y1": 329.06, "x2": 134.06, "y2": 343.69}
    assert plate.format_valid
    assert [(c.x, c.y) for c in plate.corners] == [
        (90.19, 330.5),
        (134.06, 329.06),
        (133.9, 343.69),
        (90.5, 342.11),
    ]
    assert plate.character_confidences == [0.99, 0.9812, 0.97, 0.96, 0.8563, 0.95, 0.94, 0.93, 0.92]
    assert plate.layout == "single_row"
    assert event.schema_revision == 2


def test_a_plate_without_corners_or_character_confidences_leaves_them_out():
    bare = FrameResult("ok", 780, 439, (Plate("B840CK197", 0.5, CAR.plates[0].box, 0.5),))
    [plate] = build_event(frame(), bare).plates
    assert plate.corners is None and plate.character_confidences is None


def test_float_noise_between_batches_does_not_change_the_event():
    [car] = CAR.plates
    noisy = Plate(
        car.text,
        0.8563380241,
        car.box,
        0.96452266,
        corners=tuple((x + 1e-4, y - 1e-4) for x, y in car.corners),
        character_confidences=tuple(c + 1e-6 for c in car.character_confidences),
        layout=car.layout,
    )
    assert (
        build_event(frame(), FrameResult("ok", 780, 439, (noisy,))).plates == build_event(frame(), CAR).plates
    )


def test_event_id_is_a_deterministic_uuid5_of_the_source():
    first = event_id("frames", 0, 5)
    assert first == event_id("frames", 0, 5)
    assert uuid.UUID(first).version == 5
    assert len({first, event_id("frames", 0, 6), event_id("frames", 1, 5), event_id("other", 0, 5)}) == 4
    # Pinned: changing the namespace would break consumers' deduplication across versions.
    namespace = uuid.UUID("6f1d3c52-8a4e-5b7a-9c2d-3e5f7a9b1c4d")
    assert event_id("frames", 0, 0) == str(uuid.uuid5(namespace, "frames:0:0"))


def test_a_frame_without_plates_still_gets_an_event():
    event = build_event(frame(), FrameResult("ok", 64, 48, ()))
    assert event.plates == []


def test_latency_is_never_negative():
    assert build_event(frame(received_at=20.0), CAR, now_monotonic=19.0).latency_ms == 0.0


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("B840CK197", True),
        ("A123BC77", True),
        ("X000XX000", True),
        ("B840OK197", True),
        ("B840CK1977", False),  # region of four digits
        ("B840CK1", False),
        ("840CK197", False),
        ("\u0412840\u0421\u041a197", False),  # Cyrillic letters: the model speaks Latin look-alikes
        ("D840CK197", False),  # D has no Cyrillic look-alike
        ("b840ck197", False),
        ("", False),
        ("B840CK197 ", False),
    ],
)
def test_format_valid(text, valid):
    assert format_valid(text) is valid


def test_event_record_is_keyed_by_camera_and_valid_json():
    event = build_event(frame(), CAR)
    record = event_record("plates", event)
    assert record.topic == "plates"
    assert record.key == b"cam-1"
    assert record.dead_letter_reason is None
    decoded = orjson.loads(record.value)
    assert PlateEvent.model_validate(decoded) == event
    assert decoded["processed_at"] == "2025-02-01T08:30:00Z"


def test_ok_results_are_not_rejected():
    assert rejection_for(CAR) is None


def test_undecodable_images_are_decode_rejections():
    rejection = rejection_for(FrameResult("invalid_image: not a JPEG (missing FFD8FF magic)", 0, 0, ()))
    expected = Rejection(ErrorStage.DECODE, ErrorReason.INVALID_IMAGE, "not a JPEG (missing FFD8FF magic)")
    assert rejection == expected


def test_unknown_statuses_are_inference_failures():
    rejection = rejection_for(FrameResult("exploded", 0, 0, ()))
    assert rejection is not None
    assert (rejection.stage, rejection.reason) == (ErrorStage.INFERENCE, ErrorReason.INFERENCE_FAILED)
    assert "exploded" in rejection.detail


def test_dead_letter_keeps_the_original_and_adds_error_and_source_headers():
    source = InputRecord(
        "frames", 2, 99, b"cam-7", b"garbage", [("camera_id", b"cam-7"), ("error.reason", b"stale")], 0.0
    )
    rejection = Rejection(ErrorStage.DECODE, ErrorReason.INVALID_IMAGE, "not a JPEG")
    dead = dead_letter_record("frames.dlq", source, rejection)
    assert (dead.topic, dead.key, dead.value) == ("frames.dlq", b"cam-7", b"garbage")
    assert dead.dead_letter_reason is ErrorReason.INVALID_IMAGE
    assert dead.headers == [
        ("camera_id", b"cam-7"),
        ("error.stage", b"decode"),
        ("error.reason", b"invalid_image"),
        ("error.detail", b"not a JPEG"),
        ("source.topic", b"frames"),
        ("source.partition", b"2"),
        ("source.offset", b"99"),
    ]


def test_a_dead_letter_without_its_value_says_how_big_it_was():
    source = InputRecord("frames", 0, 1, b"k", b"x" * 1234, [], 0.0)
    rejection = Rejection(ErrorStage.VALIDATE, ErrorReason.FRAME_TOO_LARGE, "big")
    dead = dead_letter_record("frames.dlq", source, rejection)
    slim = dead.without_value()
    assert slim.value is None
    assert slim.headers[-1] == ("error.value_omitted", b"1234")
    assert slim.headers[:-1] == dead.headers
    assert slim.dead_letter_reason is ErrorReason.FRAME_TOO_LARGE


# CAR's event as revision 2 wrote it (built with the code before plate pictures existed).
REVISION_2_CAR_JSON = (
    b'{"schema_version":1,"schema_revision":2,"event_id":"ef6022d2-5938-5d05-b4a8-9ee21c6e8514",'
    b'"camera_id":"cam-1","frame_id":"f1","captured_at":"2025-02-01T08:00:00Z",'
    b'"processed_at":"2025-02-01T08:30:00Z","source":{"topic":"frames","partition":1,"offset":11},'
    b'"image":{"width":780,"height":439},"plates":[{"text":"B840CK197","confidence":0.8563,'
    b'"box":{"x1":90.19,"y1":329.06,"x2":134.06,"y2":343.69},"detection_score":0.9645,'
    b'"format_valid":true,"corners":[{"x":90.19,"y":330.5},{"x":134.06,"y":329.06},'
    b'{"x":133.9,"y":343.69},{"x":90.5,"y":342.11}],'
    b'"character_confidences":[0.99,0.9812,0.97,0.96,0.8563,0.95,0.94,0.93,0.92],'
    b'"layout":"single_row"}],"model":{"name":"plate_recognition","version":"1"},"latency_ms":250.0}'
)


def test_an_event_without_pictures_is_byte_for_byte_revision_2():
    assert build_event(frame(), CAR).to_json() == REVISION_2_CAR_JSON


def test_a_plate_picture_is_base64_in_its_plate_and_makes_the_event_revision_3():
    jpeg = b"\xff\xd8\xff\xe0 a plate"
    [car] = CAR.plates
    other = Plate("A123BC77", 0.5, (1.0, 2.0, 30.0, 10.0), 0.5)  # from a frame that asked, read without one
    pictured = FrameResult("ok", 780, 439, (replace(car, image=jpeg), other))
    event = build_event(frame(), pictured)
    assert event.schema_revision == 3
    first, second = orjson.loads(event.to_json())["plates"]
    assert base64.b64decode(first["image"]) == jpeg
    assert "image" not in second
    assert PlateEvent.model_validate_json(event.to_json()) == event


def test_a_frame_not_examined_says_so_and_nothing_else_changes():
    event = not_examined_event(frame(), 1920, 1080, MODEL, NOW, 10.25)
    examined = build_event(frame(), replace(CAR, width=1920, height=1080, plates=()))
    data, expected = orjson.loads(event.to_json()), orjson.loads(examined.to_json())
    assert data == {**expected, "schema_revision": 4, "examined": False}
    assert "examined" not in expected and expected["schema_revision"] == 2
