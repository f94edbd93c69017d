"""The connector as the integration tests run it: its own process (`python -m stream_worker connect`,
as production runs it), its JSON log in a file, its metrics page scraped; and a reader of the
status topic."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from service_processes import ServiceProcess

from stream_worker.connector.status import CameraStatus, decode_status
from stream_worker.service.compacted import read_compacted

WAIT_S = 60.0


class Connector(ServiceProcess):
    def __init__(self, args: list[str], log_path: Path) -> None:
        super().__init__(args, log_path, command="connect", started="connector started")

    def cameras(self) -> set[str]:
        """The cameras whose metrics this replica exports (the cameras it reads)."""
        found = set()
        for line in self.scrape()[1].splitlines():
            if line.startswith('stream_worker_connector_camera_connected{camera="'):
                found.add(line.split('"')[1])
        return found


def read_statuses(bootstrap: str, topic: str) -> dict[str, CameraStatus]:
    return dict(read_compacted(bootstrap, topic, decode_status, timeout_s=30).values)


def wait_until(
    condition: Callable[[], object], what: str, connectors: list[Connector], timeout_s: float = WAIT_S
) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        for connector in connectors:
            assert connector.is_running(), (
                f"the connector exited with {connector.returncode}:\n{connector.log_tail()}"
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n" + "\n".join(
            c.log_tail() for c in connectors
        )
        time.sleep(0.3)
