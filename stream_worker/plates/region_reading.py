"""A region as the offline tools use it (`recognize --region`, `eval --region`): which recognizers to
ask Triton for, and each answered plate read through the region's formats.

One place for both commands, so that they read a plate exactly as each other (and as the book in
contracts/plate_formats.py and plates/reading.py say), and an unknown region fails the same way.
"""

from __future__ import annotations

from stream_worker.contracts.plate_formats import Region, UnknownRegionError, known_regions, region
from stream_worker.plates.reading import Reading, read_plate
from stream_worker.recognition import Plate


class RegionChoiceError(ValueError):
    """An unknown region code; the message lists the known ones."""


def choose_region(code: str) -> Region:
    """The region named `code` (any case); RegionChoiceError listing the known codes otherwise."""
    try:
        return region(code.strip().lower())
    except UnknownRegionError as error:
        raise RegionChoiceError(
            f"unknown region {code!r}: known regions are {', '.join(sorted(known_regions()))}"
        ) from error


def recognizers_value(chosen: Region) -> bytes:
    """The per-frame `plate_recognizers` input asking Triton for the region's recognizers."""
    return ",".join(chosen.recognizers).encode()


def read_through_formats(chosen: Region, plate: Plate) -> Reading:
    """The plate's most probable text that fits one of the region's formats (see plates/reading.py)."""
    return read_plate(chosen, plate.lprnet_probs, plate.global_probs)
