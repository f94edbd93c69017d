"""What `up` is asked to run (`UpOptions`) and how it fails (`UpError`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stream_worker.launchers.broker import default_data_dir as broker_data_dir

EXIT_OK = 0  # stopped by Ctrl-C or SIGTERM
EXIT_FAILED = 1  # could not start (the message says why)


def default_data_dir() -> Path:
    """~/.local/share/stream-worker ($XDG_DATA_HOME/stream-worker): `broker --durable` keeps its
    data in broker/ under it, as `up` does."""
    return broker_data_dir().parent


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
    def lock_path(self) -> Path:
        return self.data_dir / "up.lock"

    @property
    def console_url(self) -> str:
        host = "127.0.0.1" if self.console_host in ("0.0.0.0", "::", "") else self.console_host
        return f"http://{host}:{self.console_port}/"
