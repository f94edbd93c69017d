"""The message contracts: checked-in JSON Schemas match the models; examples validate against them."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import jsonschema
import orjson
import pytest
from pydantic import BaseModel, ValidationError, create_model

from stream_worker.contracts import (
    PLATE_IMAGE_MAX_BASE64,
    PLATE_IMAGE_MAX_BYTES,
    REVISION_3_PLATE_FIELDS,
    REVISION_4_EVENT_FIELDS,
    REVISION_5_PLATE_FIELDS,
    SCHEMAS_DIR,
    DeadLetterHeader,
    DeadLetterHeaders,
    ErrorReason,
    ErrorStage,
    FrameHeader,
    PlateEvent,
    PlateReading,
    event_revision,
    export_schemas,
    render_schemas,
)
from stream_worker.worker.events import dead_letter_record
from stream_worker.worker.validate import InputRecord, Rejection


def test_checked_in_schemas_are_up_to_date():
    stale = export_schemas(SCHEMAS_DIR, check=True)
    assert stale == [], f"stale: {stale}; run `stream-worker schemas export` and commit schemas/"


def test_check_mode_reports_stale_files_without_writing(tmp_path):
    (tmp_path / "plate_event.schema.json").write_text("{}")
    stale = export_schemas(tmp_path, check=True)
    assert set(stale) == set(render_schemas())
    assert (tmp_path / "plate_event.schema.json").read_text() == "{}"
    assert export_schemas(tmp_path) == stale
    assert export_schemas(tmp_path, check=True) == []


def _schema(name: str) -> dict:
    return orjson.loads((SCHEMAS_DIR / name).read_bytes())


EVENT = {
    "schema_version": 1,
    "event_id": "4c10c28d-4b0e-5922-8722-9d236ef1a470",
    "camera_id": "cam-1",
    "frame_id": "cam-1-0",
    "captured_at": None,
    "processed_at": "2025-02-01T08:30:00Z",
    "source": {"topic": "frames", "partition": 1, "offset": 0},
    "image": {"width": 780, "height": 439},
    "plates": [
        {
            "text": "B840CK197",
            "confidence": 0.8563,
            "box": {"x1": 90.19, "y1": 329.06, "x2": 134.06, "y2": 343.69},
            "detection_score": 0.9645,
            "format_valid": True,
        }
    ],
    "model": {"name": "plate_recognition", "version": "1"},
    "latency_ms": 12.5,
}


REVISION_2_PLATE = {
    **EVENT["plates"][0],
    "corners": [
        {"x": 90.19, "y": 330.5},
        {"x": 134.06, "y": 329.06},
        {"x": 133.9, "y": 343.69},
        {"x": 90.5, "y": 342.1},
    ],
    "character_confidences": [0.99, 0.98, 0.97, 0.96, 0.8563, 0.95, 0.94, 0.93, 0.92],
    "layout": "single_row",
}
REVISION_2_EVENT = {**EVENT, "schema_revision": 2, "plates": [REVISION_2_PLATE]}


def test_an_event_validates_against_the_schema_and_the_model():
    jsonschema.validate(EVENT, _schema("plate_event.schema.json"))
    assert PlateEvent.model_validate(EVENT).processed_at == datetime(2025, 2, 1, 8, 30, tzinfo=UTC)


def test_revision_1_and_2_events_both_validate_and_tell_themselves_apart():
    schema = _schema("plate_event.schema.json")
    jsonschema.validate(REVISION_2_EVENT, schema)
    old, new = PlateEvent.model_validate(EVENT), PlateEvent.model_validate(REVISION_2_EVENT)
    assert (old.schema_revision, old.plates[0].corners, old.plates[0].layout) == (1, None, None)
    assert new.schema_revision == 2 and len(new.plates[0].corners) == 4
    assert new.plates[0].layout == "single_row"


# A plate picture (a tiny JPEG's base64) in a revision-3 event.
REVISION_3_PLATE = {**REVISION_2_PLATE, "image": "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAP//2Q=="}
REVISION_3_EVENT = {**REVISION_2_EVENT, "schema_revision": 3, "plates": [REVISION_3_PLATE, REVISION_2_PLATE]}


def _revision_2_models() -> type[BaseModel]:
    """PlateEvent as a revision-2 consumer has it: the plate without revision 3's fields."""
    fields = {
        n: (f.annotation, f) for n, f in PlateReading.model_fields.items() if n not in REVISION_3_PLATE_FIELDS
    }
    plate = create_model("PlateReadingRevision2", **fields)
    event_fields = {n: (f.annotation, f) for n, f in PlateEvent.model_fields.items() if n != "plates"}
    return create_model("PlateEventRevision2", plates=(list[plate], ...), **event_fields)


def test_revision_3_events_validate_and_a_revision_2_consumer_reads_them():
    jsonschema.validate(REVISION_3_EVENT, _schema("plate_event.schema.json"))
    event = PlateEvent.model_validate(REVISION_3_EVENT)
    assert event.schema_revision == 3 and event.plates[0].image and event.plates[1].image is None
    assert event_revision(event.plates) == 3 and event_revision(event.plates[1:]) == 2
    # A consumer of revision 2 (its model, or its schema: unknown keys are allowed) reads it unchanged.
    old = _revision_2_models().model_validate_json(orjson.dumps(REVISION_3_EVENT))
    assert [p.text for p in old.plates] == ["B840CK197"] * 2 and not hasattr(old.plates[0], "image")
    revision_2_schema = _schema("plate_event.schema.json")
    for name in REVISION_3_PLATE_FIELDS:
        del revision_2_schema["$defs"]["PlateReading"]["properties"][name]
    jsonschema.validate(REVISION_3_EVENT, revision_2_schema)


def test_revision_3_fields_are_left_out_when_absent_not_null():
    event = PlateEvent.model_validate(REVISION_2_EVENT)
    assert event_revision(event.plates) == 2
    plate = orjson.loads(event.to_json())["plates"][0]
    assert set(plate) == set(REVISION_2_PLATE) and not REVISION_3_PLATE_FIELDS & set(plate)
    assert PlateEvent.model_validate_json(event.to_json()).model_dump() == event.model_dump()


# A frame the worker's motion gate did not send to the recognizer (revision 4).
NOT_EXAMINED_EVENT = {**EVENT, "schema_revision": 4, "plates": [], "examined": False}


def test_revision_4_not_examined_events_validate_and_older_consumers_read_them():
    schema = _schema("plate_event.schema.json")
    jsonschema.validate(NOT_EXAMINED_EVENT, schema)
    event = PlateEvent.model_validate(NOT_EXAMINED_EVENT)
    assert event.examined is False and event_revision(event.plates, event.examined) == 4
    assert orjson.loads(event.to_json()) == NOT_EXAMINED_EVENT
    # A consumer of revision 3 (its model, or its schema: unknown keys are allowed) reads it.
    fields = {
        n: (f.annotation, f) for n, f in PlateEvent.model_fields.items() if n not in REVISION_4_EVENT_FIELDS
    }
    old = create_model("PlateEventRevision3", **fields).model_validate_json(orjson.dumps(NOT_EXAMINED_EVENT))
    assert old.plates == [] and not hasattr(old, "examined")
    del schema["properties"]["examined"]
    jsonschema.validate(NOT_EXAMINED_EVENT, schema)


def test_examined_is_left_out_when_absent_and_never_true():
    for message in (EVENT, REVISION_2_EVENT, REVISION_3_EVENT):
        event = PlateEvent.model_validate(message)
        assert event.examined is None and "examined" not in orjson.loads(event.to_json())
        assert event_revision(event.plates, event.examined) == message.get("schema_revision", 2)
    with pytest.raises(ValidationError):
        PlateEvent.model_validate({**NOT_EXAMINED_EVENT, "examined": True})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**NOT_EXAMINED_EVENT, "examined": True}, _schema("plate_event.schema.json"))


# A US plate read by the second recognizer through its region's formats (revision 5).
REVISION_5_PLATE = {
    **REVISION_2_PLATE,
    "text": "7ABC123",
    "recognizer": "global",
    "country": "us",
    "plate_format": "us",
}
REVISION_5_EVENT = {**REVISION_2_EVENT, "schema_revision": 5, "plates": [REVISION_5_PLATE, REVISION_2_PLATE]}


def test_revision_5_plates_say_what_read_them_and_older_consumers_read_them():
    schema = _schema("plate_event.schema.json")
    jsonschema.validate(REVISION_5_EVENT, schema)
    event = PlateEvent.model_validate(REVISION_5_EVENT)
    assert (event.plates[0].recognizer, event.plates[0].country, event.plates[0].plate_format) == (
        "global",
        "us",
        "us",
    )
    assert event_revision(event.plates) == 5 and event_revision(event.plates[1:]) == 2
    assert orjson.loads(event.to_json()) == REVISION_5_EVENT  # the Russian plate beside: no new key
    for name in REVISION_5_PLATE_FIELDS:
        del schema["$defs"]["PlateReading"]["properties"][name]
    jsonschema.validate(REVISION_5_EVENT, schema)  # unknown keys allowed: a revision-4 consumer reads it
    old = _revision_2_models().model_validate_json(orjson.dumps(REVISION_5_EVENT))
    assert [p.text for p in old.plates] == ["7ABC123", "B840CK197"]


def test_a_plate_picture_is_bounded():
    too_large = "A" * (PLATE_IMAGE_MAX_BASE64 + 4)  # base64 of more than 16 KB
    for broken in ({**REVISION_3_PLATE, "image": too_large}, {**REVISION_3_PLATE, "image": "not base64!"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**REVISION_3_EVENT, "plates": [broken]}, _schema("plate_event.schema.json"))
        with pytest.raises(ValidationError):
            PlateReading.model_validate(broken)
    assert len(base64.b64encode(b"x" * PLATE_IMAGE_MAX_BYTES)) == PLATE_IMAGE_MAX_BASE64


@pytest.mark.parametrize(
    "broken",
    [
        {**EVENT, "schema_version": 2},
        {key: value for key, value in EVENT.items() if key != "event_id"},
        {**EVENT, "source": {"topic": "frames", "partition": -1, "offset": 0}},
        {**EVENT, "plates": [{"text": "X"}]},
        {**REVISION_2_EVENT, "plates": [{**REVISION_2_PLATE, "corners": REVISION_2_PLATE["corners"][:3]}]},
        {**REVISION_2_EVENT, "plates": [{**REVISION_2_PLATE, "layout": "three_rows"}]},
        {**REVISION_2_EVENT, "schema_revision": 0},
    ],
)
def test_broken_events_fail_the_schema(broken):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, _schema("plate_event.schema.json"))


def test_a_worker_dead_letter_matches_the_header_schema():
    record = InputRecord("frames", 0, 3, b"cam", b"junk", [("camera_id", b"cam")], 0.0)
    rejection = Rejection(ErrorStage.DECODE, ErrorReason.INVALID_IMAGE, "not a JPEG")
    dead = dead_letter_record("frames.dlq", record, rejection)
    added = {name: value.decode() for name, value in dead.headers if name.startswith(("error.", "source."))}
    jsonschema.validate(added, _schema("dead_letter_headers.schema.json"))
    assert DeadLetterHeaders.model_validate(added).error_reason is ErrorReason.INVALID_IMAGE
    slim = {name: value.decode() for name, value in dead.without_value().headers if name.startswith("error.")}
    assert slim[DeadLetterHeader.VALUE_OMITTED.value] == "4"


def test_header_names_are_the_documented_ones():
    assert [h.value for h in FrameHeader] == ["camera_id", "frame_id", "captured_at", "static"]
    assert {h.value for h in DeadLetterHeader} >= {
        "error.stage",
        "error.reason",
        "source.topic",
        "source.partition",
        "source.offset",
    }
    headers = {"camera_id": "c", "captured_at": "1738324800250"}
    jsonschema.validate(headers, _schema("frame_headers.schema.json"))
