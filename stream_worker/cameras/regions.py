"""Which region of the plate formats book (contracts/plate_formats.py) a camera's settings name, for
the services that read its plates (the worker: which recognizers, read through which formats; the
sightings: which formats make a plate).

A camera without a region, or with the default one (`ru`), gets None: the services then do exactly
what they did before cameras had regions (LPRNet's text, the Russian pattern). A region this version
does not know (a record written by a newer version: the followers keep it, contracts/cameras.py) is
not a reason to lose the camera's frames: it is read as `auto` (both recognizers, every known format),
counted on each use and logged once per camera and region.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable

from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.plate_formats import (
    DEFAULT_REGION,
    Region,
    UnknownRegionError,
    known_regions,
    region,
)

log = logging.getLogger(__name__)

FALLBACK_REGION = "auto"  # what a region unknown to this version is read as


@functools.lru_cache(maxsize=64)
def region_pattern(region: Region) -> re.Pattern[str]:
    """One expression a text matches (`.match`, anchored) when it is a plate of one of the region's
    formats: what the sightings' plate gate takes in place of the Russian pattern."""
    return re.compile("^(?:" + "|".join(fmt.regex.pattern for fmt in region.formats) + ")$")


class CameraRegions:
    """Resolves the region of each camera's current settings; `on_unknown()` counts each use of the
    fallback. Safe from any thread (the warnings' memory is a set only ever added to)."""

    def __init__(self, on_unknown: Callable[[], None] = lambda: None) -> None:
        self._on_unknown = on_unknown
        self._warned: set[tuple[str, str]] = set()
        self._regions: dict[str, Region] = {}  # by code: asked per frame, built once (a dict's get/set
        # is atomic under the GIL; two threads building one region at once build equal ones)

    def of(self, camera_id: str, settings: CameraSettings | None) -> Region | None:
        """The camera's region; None for the default (`ru`, today's behaviour)."""
        code = settings.region if settings is not None else None
        if code is None or code == DEFAULT_REGION:
            return None
        known = self._regions.get(code)
        if known is not None:
            return known
        try:
            known = self._regions[code] = region(code)
        except UnknownRegionError:
            return self._fallback(camera_id, code)
        return known

    def _fallback(self, camera_id: str, code: str) -> Region | None:
        self._on_unknown()
        fallback = FALLBACK_REGION if FALLBACK_REGION in known_regions() else DEFAULT_REGION
        if (camera_id, code) not in self._warned:
            self._warned.add((camera_id, code))
            log.warning(
                "camera's region is unknown to this version: read as another",
                extra={"camera": camera_id, "region": code, "read_as": fallback},
            )
        return None if fallback == DEFAULT_REGION else region(fallback)
