"""The time budgets of a stop and of a revocation, stated once for both services.

A stop has `shutdown_timeout_s` from its request to the process's exit. The last
`close_reserve_s` of it are kept for the final flush, commit and group leave, so draining (the
batches in flight, the sightings not yet acknowledged) must end before them; the final flush may
use half of the reserve. A revocation has `revoke_timeout_s` to drain the revoked partitions,
but never past a stop's drain end: a stop signal arriving during a rebalance still exits in time.
Every time is on the monotonic clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

CLOSE_RESERVE_S = 3.0  # of the shutdown timeout at most, kept for the final flush, commit and group leave
CLOSE_RESERVE_SHARE = 0.2  # of a short shutdown timeout


class Deadlines:
    def __init__(
        self,
        shutdown_timeout_s: float,
        revoke_timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shutdown_timeout_s = shutdown_timeout_s
        self.revoke_timeout_s = revoke_timeout_s
        self.close_reserve_s = min(CLOSE_RESERVE_S, shutdown_timeout_s * CLOSE_RESERVE_SHARE)
        self.stop_requested_at: float | None = None
        self._shutdown_started: float | None = None
        self._clock = clock

    def request_stop(self) -> None:
        """Start the stop's budget; a second request keeps the first time."""
        if self.stop_requested_at is None:
            self.stop_requested_at = self._clock()

    def begin_shutdown(self) -> float:
        """Fix when the shutdown's budget started: at the stop request, else now (a fatal error
        stops without one). Returns that time."""
        if self._shutdown_started is None:
            self._shutdown_started = (
                self.stop_requested_at if self.stop_requested_at is not None else self._clock()
            )
        return self._shutdown_started

    def drain_end(self) -> float:
        """When any drain must end for the service to exit in time: never before a stop."""
        started = self._shutdown_started if self._shutdown_started is not None else self.stop_requested_at
        if started is None:
            return math.inf
        return started + self.shutdown_timeout_s - self.close_reserve_s

    def drain_left(self, until: float = math.inf) -> float:
        """Seconds a drain may still run: until `until`, brought forward to `drain_end` by a stop
        (looked at on every call, as a stop can come during the drain); 0 once past."""
        return max(0.0, min(until, self.drain_end()) - self._clock())

    def revocation_end(self) -> float:
        """When the drain of a revocation starting now must end (before `drain_left` caps it)."""
        return self._clock() + self.revoke_timeout_s

    def final_flush_left(self) -> float:
        """Seconds the final flush of a shutdown may take: up to half the close reserve before
        the exit deadline, the other half left for the commit and the group leave."""
        end = self.begin_shutdown() + self.shutdown_timeout_s - self.close_reserve_s / 2
        return max(0.0, end - self._clock())

    def shutdown_seconds(self) -> float:
        """How long the shutdown has taken so far, from its start (see `begin_shutdown`)."""
        return self._clock() - self.begin_shutdown()
