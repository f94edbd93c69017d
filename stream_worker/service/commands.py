"""What the commands that manage a compacted settings topic (`watchlist`, `cameras`) share: their
exit statuses, how they print, and where they connect. The commands take `out` and `err` so that
they run the same under a test's runner as in a terminal."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from stream_worker.service.compacted import DEFAULT_TIMEOUT_S

OK, BROKER_FAILED, BAD_INPUT = 0, 1, 2

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Connection:
    """The broker, the settings topic and the client settings a command uses."""

    bootstrap_servers: str
    topic: str
    config: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
