"""A visit's overstay limit, the most specific first: the plate's own (its watch-list entry's
`overstay_s`), its list's (`--list-overstay-s`), its entry camera's site's (`site.overstay_s`),
the default (`--overstay-s`). 0 at the plate or the list: that vehicle never overstays, whatever
its site says. Pure logic: the service hands it the watch list as it follows it.

The plate is found as the watch lists match (plates/matching.py): the sighting's voted text or one
of its top candidates within the entry's `max_distance` (else `max_distance` here), watch and allow
entries alike (a resident's allow entry may carry a limit as a suspect's watch entry may), the
nearest first; only entries that say something of the limit (their own, or their list's) count, and
an entry expired at the sighting's capture time does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stream_worker.contracts import PlateSighting
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.plates.matching import Matcher

TOP_CANDIDATES = 3  # a sighting's best texts looked up besides its voted text


@dataclass(frozen=True, slots=True)
class Limit:
    """A limit that a watch-list entry set: `seconds` None means none (0 was given)."""

    seconds: float | None
    list: str


class Limits:
    def __init__(self, list_limits: Mapping[str, float], max_distance: float) -> None:
        self.list_limits = dict(list_limits)
        self.max_distance = max_distance
        self._matchers: tuple[Matcher, ...] = ()

    def follow(self, entries: Mapping[str, WatchEntry]) -> None:
        """The watch list as it is now (the compacted topic's latest entry per plate)."""
        relevant = [entry for entry in entries.values() if self._limit_of(entry) is not None]
        self._matchers = tuple(Matcher(relevant, self.max_distance, kind) for kind in WatchKind)

    def __len__(self) -> int:
        return sum(len(matcher) for matcher in self._matchers)

    def of(self, sighting: PlateSighting) -> Limit | None:
        """The limit the watch list sets for this sighting's plate; None: it sets none (the site's
        or the default then)."""
        texts = [sighting.text, *(candidate.text for candidate in sighting.candidates[:TOP_CANDIDATES])]
        matches = [match for matcher in self._matchers for match in matcher.match(texts, sighting.first_seen)]
        if not matches:
            return None
        nearest = min(matches, key=lambda match: (match.distance, match.entry.plate))
        seconds = self._limit_of(nearest.entry)
        return Limit(seconds or None, nearest.entry.list)

    def _limit_of(self, entry: WatchEntry) -> float | None:
        if entry.overstay_s is not None:
            return entry.overstay_s
        return self.list_limits.get(entry.list)
