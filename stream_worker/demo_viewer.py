"""The demo's viewer: reads what the services publish from the side and shows each new record as a
table row (plate events, dead letters, sightings, alerts), keeping them in `Results`."""

from __future__ import annotations

import time
from typing import Any

import orjson

from stream_worker.console import Console
from stream_worker.demo_report import Results, alert_row, dead_letter_row, event_rows, sighting_row
from stream_worker.demo_topics import DemoTopics
from stream_worker.service.topic_reader import TopicReader

VIEW_BATCH = 100  # records shown per poll
POLL_S = 0.2


class Viewer:
    def __init__(self, bootstrap: str, topics: DemoTopics, results: Results, console: Console) -> None:
        self.topics = topics
        self.results = results
        self.console = console
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
        elif topic == self.topics.plates:
            event = orjson.loads(message.value())
            if self.results.add_event(event, received_at):
                for row in event_rows(event):
                    self.console.line(row, style=None if event["plates"] else "dim")
        else:
            headers = {
                name: (raw or b"").decode("utf-8", errors="replace") for name, raw in message.headers() or []
            }
            if self.results.add_dead_letter(headers, received_at):
                self.console.line(dead_letter_row(headers), style="red")

    def close(self) -> None:
        self._reader.close()
