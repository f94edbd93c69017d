"""The message and settings contracts, the bottom layer: every service and consumer reads them, and
they import no other package of stream_worker.

- `frames`: the headers a camera may set on a frame, and a dead letter's;
- `events`: the worker's `PlateEvent`;
- `sightings`: the sightings service's `PlateSighting`;
- `alerts`: the alerts service's `PlateAlert`;
- `visits`: the visits service's `PlateVisit`;
- `watchlist`: the compacted `watchlist` topic's `WatchEntry`, with its plate normalisation;
- `cameras`: the compacted `cameras` topic's `CameraSettings` (`polygons`: what it refuses);
- `plate_formats`: the plate formats book (`plate_formats.toml`) and the regions a camera may name;
- `corrections`: the compacted `corrections` topic's `Correction`, an operator's review of a read;
- `notify`: the compacted `notify-targets` topic's `NotifyTarget` (credentials: its ${NAME} secrets),
  the console's `NotifyTest` requests and the delivery log's `NotifyDelivery`;
- `schemas`: `schemas/*.schema.json`, generated from these pydantic models (`python -m
  stream_worker.contracts` or `stream-worker schemas export`) so that consumers in other languages
  can validate messages; a test fails when the checked-in files are stale.

The message contracts are re-exported here: `from stream_worker.contracts import PlateEvent`. The
re-exports load on first use: importing `stream_worker.contracts.topics` (what every command's
options name) costs no pydantic model, so the CLI starts without building them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stream_worker.contracts.alerts import (
        AlertOrigin,
        MatchKind,
        PlateAlert,
    )
    from stream_worker.contracts.base import (
        OmitsAbsent,
    )
    from stream_worker.contracts.cameras import (
        CameraSettings,
    )
    from stream_worker.contracts.events import (
        BASE64,
        PLATE_FORMAT,
        PLATE_IMAGE_MAX_BASE64,
        PLATE_IMAGE_MAX_BYTES,
        REVISION_3_PLATE_FIELDS,
        REVISION_4_EVENT_FIELDS,
        REVISION_5_PLATE_FIELDS,
        SCHEMA_REVISION,
        SCHEMA_VERSION,
        Box,
        ImageSize,
        ModelInfo,
        PlateEvent,
        PlateLayout,
        PlateReading,
        Point,
        Source,
        event_revision,
    )
    from stream_worker.contracts.frames import (
        DeadLetterHeader,
        DeadLetterHeaders,
        ErrorReason,
        ErrorStage,
        FrameHeader,
        FrameHeaders,
    )
    from stream_worker.contracts.schemas import (
        SCHEMA_MODELS,
        SCHEMAS_DIR,
        export_schemas,
        render_schemas,
    )
    from stream_worker.contracts.sightings import (
        BestRead,
        ClosedBy,
        Direction,
        PlateSighting,
        SightingCandidate,
        SightingSource,
    )
    from stream_worker.contracts.visits import (
        PlateVisit,
        VisitEnd,
        VisitEventKind,
    )
    from stream_worker.contracts.watchlist import (
        WatchEntry,
    )

# name -> the module that defines it
_MODULES = {
    **dict.fromkeys(
        ("AlertOrigin", "MatchKind", "PlateAlert"),
        "alerts",
    ),
    **dict.fromkeys(
        ("OmitsAbsent",),
        "base",
    ),
    **dict.fromkeys(
        ("CameraSettings",),
        "cameras",
    ),
    **dict.fromkeys(
        (
            "BASE64",
            "PLATE_FORMAT",
            "PLATE_IMAGE_MAX_BASE64",
            "PLATE_IMAGE_MAX_BYTES",
            "REVISION_3_PLATE_FIELDS",
            "REVISION_4_EVENT_FIELDS",
            "REVISION_5_PLATE_FIELDS",
            "SCHEMA_REVISION",
            "SCHEMA_VERSION",
            "Box",
            "ImageSize",
            "ModelInfo",
            "PlateEvent",
            "PlateLayout",
            "PlateReading",
            "Point",
            "Source",
            "event_revision",
        ),
        "events",
    ),
    **dict.fromkeys(
        ("DeadLetterHeader", "DeadLetterHeaders", "ErrorReason", "ErrorStage", "FrameHeader", "FrameHeaders"),
        "frames",
    ),
    **dict.fromkeys(
        ("SCHEMA_MODELS", "SCHEMAS_DIR", "export_schemas", "render_schemas"),
        "schemas",
    ),
    **dict.fromkeys(
        ("BestRead", "ClosedBy", "Direction", "PlateSighting", "SightingCandidate", "SightingSource"),
        "sightings",
    ),
    **dict.fromkeys(
        ("PlateVisit", "VisitEnd", "VisitEventKind"),
        "visits",
    ),
    **dict.fromkeys(
        ("WatchEntry",),
        "watchlist",
    ),
}

__all__ = [
    "BASE64",
    "PLATE_FORMAT",
    "PLATE_IMAGE_MAX_BASE64",
    "PLATE_IMAGE_MAX_BYTES",
    "REVISION_3_PLATE_FIELDS",
    "REVISION_4_EVENT_FIELDS",
    "REVISION_5_PLATE_FIELDS",
    "SCHEMAS_DIR",
    "SCHEMA_MODELS",
    "SCHEMA_REVISION",
    "SCHEMA_VERSION",
    "AlertOrigin",
    "BestRead",
    "Box",
    "CameraSettings",
    "ClosedBy",
    "DeadLetterHeader",
    "DeadLetterHeaders",
    "Direction",
    "ErrorReason",
    "ErrorStage",
    "FrameHeader",
    "FrameHeaders",
    "ImageSize",
    "MatchKind",
    "ModelInfo",
    "OmitsAbsent",
    "PlateAlert",
    "PlateEvent",
    "PlateLayout",
    "PlateReading",
    "PlateSighting",
    "PlateVisit",
    "Point",
    "SightingCandidate",
    "SightingSource",
    "Source",
    "VisitEnd",
    "VisitEventKind",
    "WatchEntry",
    "event_revision",
    "export_schemas",
    "render_schemas",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
