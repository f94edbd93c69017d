"""How long a camera waits before it tries its source again: capped exponential backoff with
jitter ("equal jitter": half the delay fixed, half random), so that cameras behind one switch that
rebooted do not all knock on it at the same instant, and a dead camera costs a try every `cap_s`."""

from __future__ import annotations

import random
from collections.abc import Callable


def backoff_s(attempt: int, base_s: float, cap_s: float, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before try number `attempt + 1` (`attempt` 0: after the first failure):
    min(cap, base x 2^attempt), its second half drawn at random (`rand` in [0, 1))."""
    if attempt < 0 or base_s < 0 or cap_s < 0:
        raise ValueError("attempt, base_s and cap_s must not be negative")
    ceiling = min(cap_s, base_s * 2.0 ** min(attempt, 64))
    return ceiling / 2 + rand() * ceiling / 2
