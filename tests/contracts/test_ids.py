"""The ids and lengths the contracts constrain: sighting and alert ids are UUIDs, camera
ids the safe set of contracts/ids.py, texts no longer than the history store's columns; the JSON
Schemas say the same, and every producer in the code emits ids of that form."""

from __future__ import annotations

import re
from types import SimpleNamespace

import jsonschema
import orjson
import pytest
from pydantic import ValidationError
from store_records import plate_alert, plate_sighting

from stream_worker.alerts.alert import alert_id, sighting_alert_id
from stream_worker.contracts import SCHEMAS_DIR, PlateAlert, PlateSighting, Source
from stream_worker.contracts.ids import UUID_PATTERN, camera_id_problem
from stream_worker.sightings.sighting import sighting_id
from stream_worker.worker.events import event_id

HOSTILE_CAMERA_IDS = [
    "x" * 65,
    "x" * 255,
    "x?y#z",
    "../cameras/gate-1/remove?",
    "gate 1",
    "gate\u202e1",  # an RTL override
    "ga\x00te",
    "gate\n",
    "<script>",
    "{{ 7*7 }}",
    "въезд-1",
    ".hidden",
    "",
]


def _schema(name: str) -> dict:
    return orjson.loads((SCHEMAS_DIR / f"{name}.schema.json").read_bytes())


def _refused_by_schema(schema: dict, document: dict) -> bool:
    try:
        jsonschema.validate(document, schema)
    except jsonschema.ValidationError:
        return True
    return False


def _json(model) -> dict:
    return orjson.loads(model.to_json())


@pytest.mark.parametrize("camera_id", HOSTILE_CAMERA_IDS)
def test_a_camera_id_outside_the_safe_set_is_refused_by_model_and_schema(camera_id: str) -> None:
    assert camera_id_problem(camera_id) is not None
    sighting = _json(plate_sighting("s", "A123BC77"))
    alert = _json(plate_alert("a", "A123BC77"))
    cases = ((PlateSighting, "plate_sighting", sighting), (PlateAlert, "plate_alert", alert))
    for contract, name, good in cases:
        bad = {**good, "camera_id": camera_id}
        with pytest.raises(ValidationError, match="camera_id"):
            contract.model_validate(bad)
        # (Python's jsonschema lets `$` match before a final newline; JSON Schema's ECMA regexes do not.)
        assert _refused_by_schema(_schema(name), bad) or camera_id.endswith("\n")
        assert not _refused_by_schema(_schema(name), good)


def test_the_camera_ids_in_use_are_in_the_safe_set() -> None:
    for camera_id in ("gate", "gate-1", "cam07", "cam-v", "yard", "video-1", "camera-03", "x" * 64):
        assert camera_id_problem(camera_id) is None, camera_id
        assert plate_sighting("s", "A123BC77", camera_id=camera_id).camera_id == camera_id


@pytest.mark.parametrize(
    "bad_id",
    [
        "../cameras/gate-1/remove?",
        "s1",
        "F0E3B2C4-8A4E-5B7A-9C2D-3E5F7A9B1C4D",  # a UUID, but not in its canonical lowercase form
        "f0e3b2c48a4e5b7a9c2d3e5f7a9b1c4d",
        "f0e3b2c4-8a4e-5b7a-9c2d-3e5f7a9b1c4d\n",
    ],
)
def test_sighting_and_alert_ids_are_uuids(bad_id: str) -> None:
    sighting = _json(plate_sighting("s", "A123BC77"))
    alert = _json(plate_alert("a", "A123BC77", sighting="s"))
    cases = [
        (PlateSighting, "plate_sighting", {**sighting, "sighting_id": bad_id}),
        (PlateAlert, "plate_alert", {**alert, "alert_id": bad_id}),
        (PlateAlert, "plate_alert", {**alert, "sighting_id": bad_id}),
    ]
    for contract, name, document in cases:
        with pytest.raises(ValidationError, match="_id"):
            contract.model_validate(document)
        assert _refused_by_schema(_schema(name), document)


def test_every_producer_emits_canonical_uuids() -> None:
    source = Source(topic="plates", partition=2, offset=41)
    first_read = SimpleNamespace(position=(2, 41, 0))  # all sighting_id reads of a Read
    made = [
        sighting_id("gate-1", "plates", first_read),  # type: ignore[arg-type]
        alert_id("gate-1", "A123BC77", "stolen", source),
        sighting_alert_id("gate-1", "A123BC77", "stolen", "f0e3b2c4-8a4e-5b7a-9c2d-3e5f7a9b1c4d"),
        event_id("frames", 0, 7),
    ]
    for made_id in made:
        assert re.fullmatch(UUID_PATTERN, made_id), made_id
