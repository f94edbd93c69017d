"""What to change so that the running readers match the cameras this replica should read.

Pure: the wanted cameras (owned, with a source) and the running ones, each with the part of its
settings a reader is built from; the plan says which to start, which to restart (those settings
changed) and which to stop (removed, its source gone, or its partition now another replica's).
The idea of reconciling readers against live settings is Frigate's camera maintainer; this is
our own.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    start: tuple[str, ...] = ()
    restart: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.start or self.restart or self.stop)


def plan(wanted: Mapping[str, Hashable], running: Mapping[str, Hashable]) -> Plan:
    """`wanted` and `running`: camera id -> what its reader is built from (compared by equality)."""
    return Plan(
        start=tuple(sorted(set(wanted) - set(running))),
        restart=tuple(sorted(c for c in set(wanted) & set(running) if wanted[c] != running[c])),
        stop=tuple(sorted(set(running) - set(wanted))),
    )
