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

The message contracts are re-exported here: `from stream_worker.contracts import PlateEvent`. Each is
imported when first asked for (`__getattr__`), not with the package: a command that needs one
module of it (`contracts.topics`, `contracts.running_up`) does not build every pydantic model
first, which is most of the CLI's start (0.25 of 0.4 CPU s on the 2-core development machine).
"""

from __future__ import annotations

import importlib

# name -> the module of this package that defines it
_EXPORTS = {
    "AlertOrigin": "alerts",
    "MatchKind": "alerts",
    "PlateAlert": "alerts",
    "CameraSettings": "cameras",
    "BASE64": "events",
    "PLATE_FORMAT": "events",
    "PLATE_IMAGE_MAX_BASE64": "events",
    "PLATE_IMAGE_MAX_BYTES": "events",
    "REVISION_3_PLATE_FIELDS": "events",
    "REVISION_4_EVENT_FIELDS": "events",
    "REVISION_5_PLATE_FIELDS": "events",
    "SCHEMA_REVISION": "events",
    "SCHEMA_VERSION": "events",
    "Box": "events",
    "ImageSize": "events",
    "ModelInfo": "events",
    "PlateEvent": "events",
    "PlateLayout": "events",
    "PlateReading": "events",
    "Point": "events",
    "Source": "events",
    "event_revision": "events",
    "DeadLetterHeader": "frames",
    "DeadLetterHeaders": "frames",
    "ErrorReason": "frames",
    "ErrorStage": "frames",
    "FrameHeader": "frames",
    "FrameHeaders": "frames",
    "SCHEMA_MODELS": "schemas",
    "SCHEMAS_DIR": "schemas",
    "export_schemas": "schemas",
    "render_schemas": "schemas",
    "BestRead": "sightings",
    "ClosedBy": "sightings",
    "Direction": "sightings",
    "PlateSighting": "sightings",
    "SightingCandidate": "sightings",
    "SightingSource": "sightings",
    "PlateVisit": "visits",
    "VisitEnd": "visits",
    "VisitEventKind": "visits",
    "WatchEntry": "watchlist",
    "OmitsAbsent": "base",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    """A re-exported contract, imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
