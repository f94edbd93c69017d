"""The demo's viewer: reads what the services publish from the side and shows each new record as a
table row (plate events, dead letters, sightings, alerts), keeping them in `Results`, and saves
the plate pictures of events and sightings as `stream-worker tail --plate-images` does."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from stream_worker.demo.options import EXIT_USAGE, DemoError
from stream_worker.demo.report import Results, alert_row, dead_letter_row, event_rows, sighting_row
from stream_worker.demo.topics import DemoTopics
from stream_worker.service.topic_reader import TopicReader
from stream_worker.terminal import Terminal
from stream_worker.tools.tail import save_plate_images

VIEW_BATCH = 100  # records shown per poll
POLL_S = 0.2


def prepare_pictures_dir(directory: Path) -> Path:
    """Create the plate pictures' folder before anything starts: a bad --plate-images fails at once."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DemoError(f"cannot create --plate-images {directory}: {error}", EXIT_USAGE) from error
    return directory


RUN_FOLDER = re.compile(r"[0-9a-f]{8}")  # a demo's run id: the only folders pruning may remove


def prune_picture_runs(root: Path, keep: int) -> list[Path]:
    """The default pictures folder gains one run's folder per demo: remove all but the `keep`
    newest (by modification time), leaving anything not named like a run alone. Returns those
    removed; one that vanishes or cannot be read meanwhile is skipped."""
    runs = []
    for path in root.iterdir() if root.is_dir() else ():
        try:
            if RUN_FOLDER.fullmatch(path.name) and path.is_dir():
                runs.append((path.stat().st_mtime, path))
        except OSError:
            continue
    runs.sort(reverse=True)
    removed = [path for _, path in runs[keep:]]
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


class Viewer:
    def __init__(
        self, bootstrap: str, topics: DemoTopics, results: Results, console: Terminal, pictures_dir: Path
    ) -> None:
        self.topics = topics
        self.results = results
        self.console = console
        results.plate_pictures_dir = pictures_dir
        # Read from the side, in offset order with the local broker's skips healed (service/gaps.py).
        self._reader = TopicReader(bootstrap, topics.viewed)

    def show_new(self, timeout_s: float = POLL_S) -> int:
        """Show what arrived within `timeout_s`; how many records came (duplicates included)."""
        messages = self._reader.poll(VIEW_BATCH, timeout_s)
        now = time.monotonic()
        for message in messages:
            self.show(message, now)
        return len(messages)

    def show(self, message: Any, received_at: float) -> None:
        topic = message.topic()
        if topic == self.topics.alerts:
            alert = orjson.loads(message.value())
            if self.results.add_alert(alert):
                self.console.line(alert_row(alert), style="bold magenta")
        elif topic == self.topics.sightings:
            sighting = orjson.loads(message.value())
            if self.results.add_sighting(sighting):
                self.console.line(sighting_row(sighting), style="bold green")
                self._save_pictures(sighting)
        elif topic == self.topics.plates:
            event = orjson.loads(message.value())
            if self.results.add_event(event, received_at):
                for row in event_rows(event):
                    self.console.line(row, style=None if event["plates"] else "dim")
                self._save_pictures(event)
        else:
            headers = {
                name: (raw or b"").decode("utf-8", errors="replace") for name, raw in message.headers() or []
            }
            if self.results.add_dead_letter(headers, received_at):
                self.console.line(dead_letter_row(headers), style="red")

    def _save_pictures(self, record: dict[str, Any]) -> None:
        """A new event's or sighting's plate pictures, if its camera asked for them (counted)."""
        directory = self.results.plate_pictures_dir
        assert directory is not None
        try:
            self.results.plate_pictures += len(save_plate_images({"value": record}, directory))
        except OSError as error:
            raise DemoError(f"cannot write plate pictures to {directory}: {error}") from error

    def close(self) -> None:
        self._reader.close()
