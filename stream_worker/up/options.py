"""What `up` is asked to run (`UpOptions`) and how it fails (`UpError`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from stream_worker.contracts.running_up import CONSOLE_TOKEN_FILE
from stream_worker.contracts.topics import FRAMES_RETENTION_MS
from stream_worker.launchers.broker import default_data_dir as broker_data_dir

EXIT_OK = 0  # stopped by Ctrl-C or SIGTERM
EXIT_FAILED = 1  # could not start (the message says why)


def default_data_dir() -> Path:
    """~/.local/share/stream-worker ($XDG_DATA_HOME/stream-worker): `broker --durable` keeps its
    data in broker/ under it, as `up` does."""
    return broker_data_dir().parent


DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*")


def duration_ms(text: str) -> int:
    """ "90s", "3m", "1h", "1.5h", "7d" in milliseconds; ValueError for anything else."""
    match = DURATION.fullmatch(text)
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"{text!r} is not a duration such as 90s, 3m, 1h or 7d")
    return round(float(match[1]) * DURATION_UNITS_MS[match[2]])


def format_duration(milliseconds: int) -> str:
    """The largest unit that divides it: 3600000 -> "1h", 180000 -> "3m"."""
    for unit in ("d", "h", "m", "s"):
        if milliseconds % DURATION_UNITS_MS[unit] == 0:
            return f"{milliseconds // DURATION_UNITS_MS[unit]}{unit}"
    return f"{milliseconds}ms"


class UpError(Exception):
    """`up` cannot start; the message says what failed and what to do."""


@dataclass(frozen=True)
class UpOptions:
    data_dir: Path
    broker_port: int = 9092
    console_host: str = "127.0.0.1"
    console_port: int = 8080
    triton_url: str | None = None  # None: the local Triton, after exporting the models if needed
    repository: Path = Path("model_repository")
    weights_dir: Path | None = None
    partitions: int = 3
    frames_retention_ms: int = FRAMES_RETENTION_MS  # the other topics': contracts/topics.py
    plates_retention_ms: int = FRAMES_RETENTION_MS  # plates with their pictures: the frames' by default
    session_timeout_ms: int = 10000  # a killed service's partitions go to its restart this soon
    shutdown_timeout_s: float = 15.0

    @property
    def broker_dir(self) -> Path:
        return self.data_dir / "broker"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def secrets_path(self) -> Path:
        """The notify service's secrets file (targets' ${NAME}s), read again when it changes."""
        return self.data_dir / "notify-secrets.env"

    @property
    def status_path(self) -> Path:
        return self.data_dir / "up.json"

    @property
    def console_token_path(self) -> Path:
        """The console's read-only token for the CLI, new on each start (contracts/running_up.py)."""
        return self.data_dir / CONSOLE_TOKEN_FILE

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "up.lock"

    @property
    def console_url(self) -> str:
        host = "127.0.0.1" if self.console_host in ("0.0.0.0", "::", "") else self.console_host
        return f"http://{host}:{self.console_port}/"
