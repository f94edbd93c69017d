"""A record of the plates topic as the services that read it (sightings, alerts) keep it."""

from __future__ import annotations

from dataclasses import dataclass

# A pass's records are small JSON: the default prefetch (64 MiB per partition) is far too much.
DEFAULT_PREFETCH_KBYTES = 4 * 1024


@dataclass(frozen=True, slots=True)
class PlateRecord:
    partition: int
    offset: int
    value: bytes | None
