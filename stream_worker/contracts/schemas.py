"""The JSON Schema files of the contracts, generated from the pydantic models (`stream-worker schemas
export`); a test fails when the checked-in files are stale."""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import BaseModel

from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.corrections import Correction
from stream_worker.contracts.events import PlateEvent
from stream_worker.contracts.frames import DeadLetterHeaders, FrameHeaders
from stream_worker.contracts.notify import NotifyDelivery, NotifyTarget, NotifyTest
from stream_worker.contracts.sightings import PlateSighting
from stream_worker.contracts.visits import PlateVisit
from stream_worker.contracts.watchlist import WatchEntry

SCHEMAS_DIR = Path(__file__).resolve().parent.parent.parent / "schemas"


SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "plate_event.schema.json": PlateEvent,
    "plate_sighting.schema.json": PlateSighting,
    "frame_headers.schema.json": FrameHeaders,
    "dead_letter_headers.schema.json": DeadLetterHeaders,
    "watch_entry.schema.json": WatchEntry,
    "plate_alert.schema.json": PlateAlert,
    "camera_settings.schema.json": CameraSettings,
    "notify_target.schema.json": NotifyTarget,
    "notify_test.schema.json": NotifyTest,
    "notify_delivery.schema.json": NotifyDelivery,
    "plate_visit.schema.json": PlateVisit,
    "correction.schema.json": Correction,
}


def render_schemas() -> dict[str, bytes]:
    """The JSON Schema files, by file name, exactly as they are checked in."""
    rendered = {}
    for file_name, model in SCHEMA_MODELS.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
        rendered[file_name] = orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    return rendered


def export_schemas(directory: Path = SCHEMAS_DIR, check: bool = False) -> list[str]:
    """Write the schema files (or, with `check`, only list the stale ones); returns the stale names."""
    stale = []
    for file_name, content in render_schemas().items():
        path = directory / file_name
        if not path.exists() or path.read_bytes() != content:
            stale.append(file_name)
            if not check:
                directory.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
    return stale
