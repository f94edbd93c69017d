"""An alert on its way to the broker and the input offset it holds meanwhile: what the sightings
and the corrections sides hand the service to publish (sightings.py, corrections.py)."""

from __future__ import annotations

from dataclasses import dataclass

from stream_worker.contracts import PlateAlert
from stream_worker.service.offsets import PartitionOffsets


@dataclass(frozen=True, slots=True)
class HeldAlert:
    alert: PlateAlert
    partition: int  # of the input topic (sightings, corrections)
    offset: int
    commits: PartitionOffsets  # the assignment it belongs to: a later one ignores its delivery
