"""How far behind the worker is, in seconds: the age (since its producer stamped it) of the last
frame it took from Kafka, so that frames other producers publish are seen waiting too. Once the
worker has taken every frame offered for `idle_s` (nothing came, and it is not holding back for
backpressure), it is behind by nothing."""

from __future__ import annotations

IDLE_S = 1.0


class Lag:
    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self._age_s = 0.0
        self._taken_at: float | None = None  # monotonic

    def taken(self, produced_ms: int | None, now_epoch_s: float, now: float) -> None:
        """A frame taken at `now` (monotonic) whose record was stamped `produced_ms` (epoch ms)."""
        self._taken_at = now
        if produced_ms is not None and produced_ms > 0:
            self._age_s = max(0.0, now_epoch_s - produced_ms / 1000)

    def seconds(self, now: float, held_back: bool) -> float:
        if not held_back and (self._taken_at is None or now - self._taken_at >= self.idle_s):
            return 0.0
        return self._age_s
