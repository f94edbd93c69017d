"""What a camera's settings ask of Triton for its frames (plate pictures, the masks, the region's
recognizers, the detector's scales), and the
worker's step between Triton's answer and the event: which plates the settings keep (minimum
width), and the zone of each.

Masks go with the request (`plate_masks`): Triton drops a masked plate before reading it, so it
costs its detection only, and says how many it dropped (`FrameResult.masked`). Settings come from
a callable (the follower of the `cameras` topic), so a change applies to the next frame. A camera's
zones are scaled to a frame size once and kept (bounded LRU) until its settings object changes: a
plate then costs a few comparisons. A camera without settings keeps every plate, with no zone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from stream_worker.cameras.geometry import CameraGeometry
from stream_worker.cameras.regions import CameraRegions
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.plate_formats import Region
from stream_worker.recognition import FrameResult, Plate

DEFAULT_SETTINGS = CameraSettings()


@dataclass(frozen=True, slots=True)
class KeptPlates:
    """A frame's plates after its camera's settings: (plate, zone) in Triton's order."""

    plates: list[tuple[Plate, str | None]]
    masked: int = 0
    too_narrow: int = 0


class CameraRules:
    """Applies each camera's current settings to its frames' plates."""

    def __init__(
        self,
        settings_of: Callable[[str], CameraSettings | None],
        cache_size: int = 1024,
        regions: CameraRegions | None = None,
    ) -> None:
        self.settings_of = settings_of
        self.cache_size = cache_size
        self.regions = regions or CameraRegions()
        self._geometries: OrderedDict[tuple[str, int, int], tuple[CameraSettings, CameraGeometry]] = (
            OrderedDict()
        )

    def settings(self, camera_id: str) -> CameraSettings:
        return self.settings_of(camera_id) or DEFAULT_SETTINGS

    def plate_images(self, camera_id: str) -> bool:
        """Whether the camera's settings ask for plate pictures."""
        return self.settings(camera_id).plate_images

    def plate_masks(self, camera_id: str) -> bytes:
        """The camera's masks as Triton's `plate_masks` takes them (JSON polygons), b"" for none."""
        masks = self.settings(camera_id).masks
        return orjson.dumps(masks) if masks else b""

    def detector_scales(self, camera_id: str) -> tuple[float, ...]:
        """The camera's own detector scales for Triton's `detector_scales`; (): Triton's default."""
        return self.settings(camera_id).detector_scales or ()

    def region(self, camera_id: str) -> Region | None:
        """The camera's region (its recognizers and plate formats); None: `ru`, LPRNet alone."""
        return self.regions.of(camera_id, self.settings_of(camera_id))

    def geometry(self, camera_id: str, width: int, height: int) -> CameraGeometry | None:
        """The camera's zones in this frame size's pixels; None when nothing applies."""
        settings = self.settings(camera_id)
        if not settings.zones and settings.min_plate_width is None:
            return None
        key = (camera_id, width, height)
        cached = self._geometries.get(key)
        if cached is not None and cached[0] is settings:
            self._geometries.move_to_end(key)
            return cached[1]
        geometry = CameraGeometry.from_settings(settings, width, height)
        self._geometries[key] = (settings, geometry)
        self._geometries.move_to_end(key)
        while len(self._geometries) > self.cache_size:
            self._geometries.popitem(last=False)
        return geometry

    def apply(self, camera_id: str, result: FrameResult) -> KeptPlates:
        """The plates to publish: too narrow ones dropped and counted, zones tagged; `masked` is
        what Triton dropped for the masks sent with the frame."""
        if not result.plates:
            return KeptPlates([], result.masked)
        geometry = self.geometry(camera_id, result.width, result.height)
        if geometry is None:
            return KeptPlates([(plate, None) for plate in result.plates], result.masked)
        kept: list[tuple[Plate, str | None]] = []
        too_narrow = 0
        for plate in result.plates:
            if geometry.too_narrow(plate.box):
                too_narrow += 1
            else:
                kept.append((plate, geometry.zone(plate.box)))
        return KeptPlates(kept, result.masked, too_narrow)
