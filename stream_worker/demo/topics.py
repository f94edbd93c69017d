"""The demo's topics: their names, creating them (and deleting them on an external broker), and
the watch list the demo puts the sample van on (the cameras' settings: cameras_settings.py; the
notify target: webhook.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import astuple, dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from stream_worker.contracts import topics as topology
from stream_worker.contracts.topics import topic as declared
from stream_worker.contracts.watchlist import new_entry
from stream_worker.demo.options import DemoError
from stream_worker.launchers.broker import BrokerError, create_topics
from stream_worker.service.compacted import CompactedTopicError, ensure_compacted_topic
from stream_worker.watchlists.topic import WatchlistStoreError, write_changes

# The van in samples/car.jpg, by its true text: the recognizer reads it B840OK197 (a fuzzy match).
SAMPLE_PLATE = "B840CK197"
SAMPLE_LIST = "demo"
SAMPLE_LABEL = "sample van"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoTopics:
    frames: str = topology.FRAMES.name
    plates: str = topology.PLATES.name
    dead_letters: str = topology.FRAMES_DLQ.name
    sightings: str = topology.SIGHTINGS.name
    alerts: str = topology.ALERTS.name
    store_dead_letters: str = topology.STORE_DLQ.name  # the records the history store cannot write
    watchlist: str = topology.WATCHLIST.name  # compacted
    cameras: str = topology.CAMERAS.name  # compacted: each camera's settings
    camera_status: str = topology.CAMERA_STATUS.name  # compacted: the connector's, with video cameras only
    notify_targets: str = topology.NOTIFY_TARGETS.name  # compacted: notify's targets (the webhook)
    notify_dead_letters: str = topology.NOTIFY_DLQ.name  # what notify could not deliver
    notify_deliveries: str = topology.NOTIFY_DELIVERIES.name  # notify's delivery log (the console shows it)
    notify_tests: str = topology.NOTIFY_TESTS.name  # compacted: the console's "send a test" requests
    notify_status: str = topology.NOTIFY_STATUS.name  # compacted: the target secrets notify has (names)
    notify_replays: str = topology.NOTIFY_REPLAYS.name  # dead letters sent again (`notify dlq replay`)
    corrections: str = topology.CORRECTIONS.name  # compacted: the console's reviews of reads
    visits: str = topology.VISITS.name  # the visits service's (not run by the demo): notify and store read it

    @classmethod
    def for_run(cls, run_id: str | None) -> DemoTopics:
        """The default names, or (on an external broker) fresh ones for this run."""
        defaults = cls()
        if run_id is None:
            return defaults
        return cls(*(f"stream-worker-demo-{run_id}.{name}" for name in astuple(defaults)))

    @property
    def names(self) -> tuple[str, ...]:
        """Every topic but the camera status (`with_connector`)."""
        return tuple(name for name in astuple(self) if name != self.camera_status)

    def with_connector(self, connector: bool) -> tuple[str, ...]:
        """The topics of a run: the camera status too when the camera connector runs."""
        return (*self.names, self.camera_status) if connector else self.names

    def declared(self) -> dict[str, str]:
        """Each topic of this run by its name in the topology (contracts/topics.py)."""
        return dict(zip(astuple(self), astuple(DemoTopics()), strict=True))

    @property
    def compacted(self) -> tuple[str, ...]:
        """The tables (latest value per key) rather than streams."""
        return tuple(name for name, default in self.declared().items() if declared(default).compacted)

    @property
    def viewed(self) -> tuple[str, ...]:
        """What the viewer shows: everything the services publish."""
        return (self.plates, self.dead_letters, self.sightings, self.alerts)


def create(bootstrap: str, topics: DemoTopics, partitions: int, connector: bool = False) -> None:
    """The streams with `partitions` each and their declared retention, the tables compacted (the
    camera status only for the connector); DemoError when the broker refuses."""
    names = topics.with_connector(connector)
    defaults = topics.declared()
    try:
        for name in names:
            if name in topics.compacted:
                ensure_compacted_topic(bootstrap, name)
            else:
                create_topics(bootstrap, [name], partitions, declared(defaults[name]).config())
    except (BrokerError, KafkaException, CompactedTopicError) as error:
        raise DemoError(f"cannot create topics on --bootstrap-servers {bootstrap}: {error}") from error


def delete(bootstrap: str, names: Sequence[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the futures
    futures = admin.delete_topics(list(names), request_timeout=15)
    for name, future in futures.items():
        if (error := future.exception(timeout=15)) is not None:
            log.warning("could not delete demo topic %s: %s", name, error)


def watch_sample_van(bootstrap: str, topics: DemoTopics) -> None:
    """Put the sample van on the watch list (list `demo`) by its true text."""
    entry = new_entry(SAMPLE_PLATE, SAMPLE_LIST, SAMPLE_LABEL)
    try:
        write_changes(bootstrap, topics.watchlist, [entry])
    except (WatchlistStoreError, KafkaException) as error:
        raise DemoError(f"cannot write the watch list {topics.watchlist}: {error}") from error
