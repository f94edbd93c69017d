"""When the demo may stop: every frame published has its result (a plate event or a dead letter),
showing the progress meanwhile, then the sightings and alerts services have consumed every plate
event and closed their last passes, so that nothing they publish is cut off, and then the notify
service has delivered every alert to the demo's webhook."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from stream_worker.demo.cameras import Cameras
from stream_worker.demo.connector_feed import ConnectorFeed
from stream_worker.demo.report import Results
from stream_worker.demo.services import ServiceChild, log_tail
from stream_worker.demo.viewer import Viewer
from stream_worker.service.http import read_metric
from stream_worker.terminal import Terminal
from stream_worker.worker.metrics import read_frames_in

# Results idle this long with frames outstanding: ask the worker whether it ever received them.
BROKER_SKIP_SETTLE_S = 10.0
DRAIN_WAIT_S = 30.0
FINAL_POLLS = 5  # what was published last


@dataclass(frozen=True)
class Consumer:
    """A service reading the plate events: its metrics say how many it took and how many passes it holds."""

    service: ServiceChild
    events_in_metric: str
    held_metric: str

    def drained(self, events: int) -> bool:
        url = self.service.metrics_url
        events_in = read_metric(url, self.events_in_metric)
        held = read_metric(url, self.held_metric)
        return events_in is not None and events_in >= events and held == 0


def sightings_consumer(service: ServiceChild) -> Consumer:
    return Consumer(service, "stream_worker_sightings_events_in_total", "stream_worker_sightings_held")


def alerts_consumer(service: ServiceChild) -> Consumer:
    return Consumer(service, "stream_worker_alerts_events_in_total", "stream_worker_alerts_held")


class Settler:
    def __init__(
        self,
        console: Terminal,
        viewer: Viewer,
        results: Results,
        cameras: Cameras,
        check: Callable[[], None],
        settle_timeout_s: float,
        feed: ConnectorFeed | None = None,
    ) -> None:
        self.console = console
        self.viewer = viewer
        self.results = results
        self.cameras = cameras
        self.check = check  # raises when a child died
        self.settle_timeout_s = settle_timeout_s
        self.feed = feed  # the camera connector's, stopped when the simulated cameras are done

    def until_results(self, worker: ServiceChild) -> None:
        """Until every frame sent has its result, the rest provably lost by the broker, or no result
        came for `settle_timeout_s` (said on stderr); progress bars meanwhile. With the camera
        connector, also until it has stopped (when the simulated cameras are done: its clips loop
        forever) and every frame it published has its result."""
        planned = self.cameras.options.planned_frames
        results = self.results
        with self.console.counters({"published": planned, "results": planned}) as bars:
            idle_since = time.monotonic()
            while True:
                received = self.viewer.show_new()
                now = time.monotonic()
                if received:
                    idle_since = now
                self.check()
                bars.update("published", self.cameras.handed_over)
                feed = self.feed
                if feed is not None:
                    feed.poll()
                if self.cameras.producing:
                    bars.update("results", results.accounted)
                    idle_since = now
                    continue
                sent = self.cameras.sent
                bars.update("results", results.accounted, total=sent)
                if feed is not None:
                    if not feed.stop_asked and not feed.played_once():
                        if now - idle_since <= self.settle_timeout_s:
                            continue  # each clip once whole (idle_since: when the cameras ended)
                        self.console.error(
                            f"the camera connector published nothing for {self.settle_timeout_s:.0f} s; "
                            f"its log ends with:\n{log_tail(feed.child.log_path)}"
                        )
                    feed.stop()
                    if not feed.settled():
                        if feed.stopping_for_s <= self.settle_timeout_s:
                            idle_since = now  # its last frames are still coming
                            continue
                        self.console.error(
                            f"the camera connector's frames were not all read back within "
                            f"{self.settle_timeout_s:.0f} s of its stop; counting the {feed.frames} read"
                        )
                        feed.give_up()
                    sent += feed.frames
                if results.results >= sent:
                    return
                if now - idle_since > BROKER_SKIP_SETTLE_S and self._broker_skipped(worker, sent):
                    return
                if now - idle_since > self.settle_timeout_s:
                    self.console.error(
                        f"no new results for {self.settle_timeout_s:.0f} s with "
                        f"{sent - results.results} frames unaccounted for; worker log ends with:\n"
                        f"{log_tail(worker.log_path)}"
                    )
                    return

    def until_drained(self, consumers: list[Consumer]) -> None:
        """Until each consumer has taken every plate event and holds no pass open or unpublished
        (the cameras' last passes close on silence), showing what arrives."""
        deadline = time.monotonic() + DRAIN_WAIT_S
        with self.console.step("waiting for the last sightings and alerts (the cameras fell silent)"):
            while time.monotonic() < deadline:
                self.viewer.show_new()
                self.check()
                if all(consumer.drained(len(self.results.events)) for consumer in consumers):
                    break
            for _ in range(FINAL_POLLS):
                self.viewer.show_new()

    def until_delivered(self, delivered: Callable[[], set[str]]) -> None:
        """Until every alert shown has reached the demo's webhook (`delivered`: the event ids
        arrived), at most DRAIN_WAIT_S, showing what else arrives meanwhile."""
        deadline = time.monotonic() + DRAIN_WAIT_S
        with self.console.step("waiting for the notify service to deliver the alerts to the demo's webhook"):
            while time.monotonic() < deadline:
                self.viewer.show_new()  # waits a little for records
                self.check()
                if set(self.results.alerts) <= delivered():
                    return

    def _broker_skipped(self, worker: ServiceChild, sent: int) -> bool:
        """True when every frame the worker received has its result and the rest never reached it
        (`sent`: the demo's frames and the connector's).

        The local Tansu broker now and then skips a record on a live fetch (docs/limitations.md):
        waiting longer would not bring those frames, and the summary names the broker, not the
        worker, as where they went missing.
        """
        received = read_frames_in(worker.metrics_url)
        if received is None or received != self.results.results or received >= sent:
            return False
        self.results.never_delivered = sent - received
        return True
