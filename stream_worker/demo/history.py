"""The history store and its console in the demo (`python -m stream_worker store`): it keeps the
run's sightings and alerts in a SQLite database in the demo's scratch folder (gone with it), and
its console, on a free port, shows them while the demo runs; the address and, since no user is
configured, the admin password the store prints once are shown with the services."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stream_worker.demo.services import ServiceChild
from stream_worker.demo.topics import DemoTopics
from stream_worker.launchers.ports import free_port


class HistoryStore(ServiceChild):
    def __init__(self, common: Sequence[str], group: str, topics: DemoTopics, workdir: Path) -> None:
        self.console_port = free_port()
        super().__init__(
            "store",
            [*common, "--group-id", f"{group}-store", "--sightings-topic", topics.sightings,
             "--alerts-topic", topics.alerts, "--dlq-topic", topics.store_dead_letters,
             "--watchlist-topic", topics.watchlist,
             "--cameras-topic", topics.cameras, "--camera-status-topic", topics.camera_status,
             "--notify-targets-topic", topics.notify_targets, "--notify-tests-topic", topics.notify_tests,
             "--notify-deliveries-topic", topics.notify_deliveries,
             "--notify-status-topic", topics.notify_status, "--corrections-topic", topics.corrections,
             "--visits-topic", topics.visits,
             "--data-dir", str(workdir / "store"),
             "--console-host", "127.0.0.1", "--console-port", str(self.console_port)],
            workdir,
        )  # fmt: skip

    @property
    def console_url(self) -> str:
        return f"http://127.0.0.1:{self.console_port}/"
