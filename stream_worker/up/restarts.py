"""When to start a child that died again: at once the first time, then after a delay that doubles
with each death in a row up to a cap, so that a child failing at start-up does not spin the CPU.
A child that stayed up for `stable_s` is healthy again: its next death restarts it at once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    first_delay_s: float = 0.0  # a crash of a healthy child: start it again at once
    delay_s: float = 1.0  # the second death in a row waits this long, the third twice as long...
    max_delay_s: float = 30.0
    stable_s: float = 60.0  # up this long: no longer counted as dying in a row

    def delay(self, deaths_in_a_row: int) -> float:
        """The wait before the next start after the `deaths_in_a_row`-th death (1: the first)."""
        if deaths_in_a_row <= 1:
            return self.first_delay_s
        return min(self.max_delay_s, self.delay_s * 2 ** (deaths_in_a_row - 2))


class Restarts:
    """One child's restart bookkeeping: `started`, `died`, `due` (times from a monotonic clock)."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.count = 0  # restarts made
        self.in_a_row = 0
        self.started_at: float | None = None
        self.due_at: float | None = None  # set while the child is down and waits for its restart

    def started(self, now: float) -> None:
        self.started_at = now
        self.due_at = None

    def died(self, now: float) -> float:
        """Record a death; the delay before its restart."""
        if self.started_at is not None and now - self.started_at >= self.policy.stable_s:
            self.in_a_row = 0
        self.started_at = None  # a start that fails is one more death in a row
        self.in_a_row += 1
        delay = self.policy.delay(self.in_a_row)
        self.due_at = now + delay
        return delay

    def due(self, now: float) -> bool:
        return self.due_at is not None and now >= self.due_at

    def restarted(self, now: float) -> None:
        self.count += 1
        self.started(now)
