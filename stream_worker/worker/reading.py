"""A frame's plates read through its camera's region: from each plate's recognizer
probabilities (Triton's `plate_lprnet_probs`, `plate_global_probs`) to the most probable text that
fits one of the region's formats (plates/reading.py), with the country and format it fits.

A camera without a region (or `ru`) is not read here at all: its plates keep LPRNet's text from
Triton. A plate whose probabilities cannot be read (none came back for the
region's recognizers, or the wrong shape) keeps Triton's plain text, `format_valid` false, and is
counted and logged: one bad plate costs neither its frame nor its neighbours.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from stream_worker.contracts.plate_formats import Region
from stream_worker.plates.reading import Reading, read_plate
from stream_worker.recognition import LPRNET, Plate

log = logging.getLogger(__name__)


def read_in_region(
    region: Region | None, plates: Sequence[Plate], on_unread: Callable[[], None] = lambda: None
) -> list[Reading | None]:
    """One reading per plate, in order; all None when `region` is None (today's texts)."""
    if region is None:
        return [None] * len(plates)
    return [_read(region, plate, on_unread) for plate in plates]


def _read(region: Region, plate: Plate, on_unread: Callable[[], None]) -> Reading:
    try:
        return read_plate(region, plate.lprnet_probs, plate.global_probs)
    except (ValueError, IndexError) as error:
        on_unread()
        log.warning(
            "plate not readable through its region's formats: its plain text is published",
            extra={"region": region.code, "recognizers": ",".join(plate.recognizers), "error": str(error)},
        )
        return Reading(
            text=plate.text,
            confidence=plate.confidence,
            character_confidences=plate.character_confidences,
            recognizer=plate.recognizers[0] if plate.recognizers else LPRNET,
            country=None,
            format=None,
            format_valid=False,
        )
