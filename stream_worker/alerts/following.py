"""The watch list as the alerts service sees it: read whole at the start, then followed live.

The reading is service/compacted.py's `CompactedFollower` (shared with the cameras' settings):
`load` notes each partition's end, reads the whole compacted topic, then follows it from the ends
noted first; `poll` (each turn of the service's loop, never blocking) applies entries and
tombstones as they come. This module only adds what is the watch list's own: its record format
(watchlist.py) and the `Matcher`, rebuilt when the list changed, so a change takes effect within
a turn or two. A watch-list topic that does not exist yet is an empty list; it is looked for again
every few seconds and read from its beginning once it appears (never created).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from stream_worker.contracts.watchlist import WatchEntry, decode_record
from stream_worker.plates.matching import Matcher
from stream_worker.service.compacted import CompactedFollower, CompactedTopicError
from stream_worker.watchlists.topic import DEFAULT_TIMEOUT_S, WatchlistStoreError


class WatchlistFollower:
    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        default_max_distance: float,
        config: Mapping[str, object] | None = None,
        on_skipped: Callable[[], None] = lambda: None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.topic = topic
        self.default_max_distance = default_max_distance
        self.matcher = Matcher({}, default_max_distance)
        self._follower: CompactedFollower[str, WatchEntry] = CompactedFollower(
            bootstrap_servers,
            topic,
            decode_record,
            config,
            on_skipped=on_skipped,
            timeout_s=timeout_s,
            name="watch list",
        )

    @property
    def entries(self) -> Mapping[str, WatchEntry]:
        """The watch list by plate (replaced on each change, never changed in place)."""
        return self._follower.values

    @property
    def loaded(self) -> bool:
        return self._follower.loaded

    @property
    def changes(self) -> int:
        """Records applied after the load."""
        return self._follower.changes

    def load(self) -> None:
        """Read the whole watch list; WatchlistStoreError when the broker does not answer in time."""
        try:
            self._follower.load()
        except CompactedTopicError as error:
            raise WatchlistStoreError(str(error)) from error
        self.matcher = Matcher(self.entries, self.default_max_distance)

    def poll(self) -> bool:
        """Apply what was written since; True when the list changed (the matcher is rebuilt)."""
        if not self._follower.poll():
            return False
        self.matcher = Matcher(self.entries, self.default_max_distance)
        return True

    def close(self) -> None:
        self._follower.close()
