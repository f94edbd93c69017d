"""The topology, declared once: every topic of the stack with its kind, partitions, retention, the
service that writes it and those that read it.

`stream-worker up`, the demo and `stream-worker broker` create their topics from it, and the
deploy tests check `deploy/` against it, so that a topic's retention is the same on the embedded
broker and on Kafka. Plain data: it imports nothing of the package.

- A `STREAM` keeps its records for `retention_ms` and at most `retention_bytes` per partition
  (Kafka's `retention.ms` and `retention.bytes`; the embedded broker's object store applies them,
  launchers/retention.py).
- A `COMPACTED` topic is a table (the latest record of each key counts): it is never trimmed,
  unless it declares `retention_ms` (Kafka's `cleanup.policy=compact,delete`): a status that its
  writer rewrites every few seconds (camera-status) needs no history older than that, and the
  embedded broker, which never compacts, would otherwise keep every rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MIB = 1024 * 1024

FRAMES_RETENTION_MS = HOUR_MS  # whole JPEGs: the bulk of the disk (`up --frames-retention`)
STATUS_RETENTION_MS = HOUR_MS  # camera-status: rewritten every 5 s by a running connector


class Kind(StrEnum):
    STREAM = "stream"
    COMPACTED = "compacted"


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    kind: Kind
    partitions: int  # on Kafka (deploy/); `up` gives every stream its --partitions
    producer: str
    consumers: tuple[str, ...]
    retention_ms: int | None = None  # a stream's; a compacted topic's only when compact,delete
    retention_bytes: int | None = None  # per partition; None: no size bound
    fixed_partitions: bool = False  # compacted: the count is never changed once created

    @property
    def compacted(self) -> bool:
        return self.kind is Kind.COMPACTED

    def config(self, retention_ms: int | None = None) -> dict[str, str]:
        """The topic's Kafka configuration (`retention_ms` overrides the declared one)."""
        if self.compacted and self.retention_ms is None:
            return {"cleanup.policy": "compact"}
        if self.compacted:
            return {"cleanup.policy": "compact,delete", "retention.ms": str(self.retention_ms)}
        config = {"cleanup.policy": "delete", "retention.ms": str(retention_ms or self.retention_ms)}
        if self.retention_bytes is not None:
            config["retention.bytes"] = str(self.retention_bytes)
        return config


def _stream(
    name: str, partitions: int, producer: str, consumers: tuple[str, ...], retention_ms: int, mib: int
) -> Topic:
    return Topic(name, Kind.STREAM, partitions, producer, consumers, retention_ms, mib * MIB)


def _compacted(
    name: str, partitions: int, producer: str, consumers: tuple[str, ...], retention_ms: int | None = None
) -> Topic:
    return Topic(name, Kind.COMPACTED, partitions, producer, consumers, retention_ms, fixed_partitions=True)


FRAMES = _stream("frames", 6, "connector", ("worker",), FRAMES_RETENTION_MS, 1024)
PLATES = _stream("plates", 6, "worker", ("sightings", "alerts"), 7 * DAY_MS, 512)
FRAMES_DLQ = _stream("frames.dlq", 1, "worker", ("tail",), 14 * DAY_MS, 256)
SIGHTINGS = _stream("sightings", 6, "sightings", ("store", "alerts", "notify"), 7 * DAY_MS, 256)
ALERTS = _stream("alerts", 6, "alerts", ("store", "notify"), 7 * DAY_MS, 256)
# Read whole by the visits service at each start (its open visits): a visit longer than this
# retention is forgotten.
VISITS = _stream("visits", 6, "visits", ("visits", "notify", "store"), 14 * DAY_MS, 256)
STORE_DLQ = _stream("store.dlq", 1, "store", ("tail",), 14 * DAY_MS, 256)
NOTIFY_DLQ = _stream("notify.dlq", 1, "notify", ("notify dlq replay", "tail"), 14 * DAY_MS, 256)
NOTIFY_DELIVERIES = _stream("notify.deliveries", 1, "notify", ("store",), 14 * DAY_MS, 256)
NOTIFY_REPLAYS = _stream("notify.replays", 1, "notify dlq replay", ("notify",), 14 * DAY_MS, 256)
WATCHLIST = _compacted("watchlist", 1, "watchlist add", ("alerts", "notify", "store", "visits"))
CAMERAS = _compacted("cameras", 6, "cameras set", ("connector", "sightings", "store"))
CAMERA_STATUS = _compacted("camera-status", 3, "connector", ("store", "cameras status"), STATUS_RETENTION_MS)
NOTIFY_TARGETS = _compacted("notify-targets", 1, "notify targets set", ("notify", "store"))
NOTIFY_TESTS = _compacted("notify-tests", 1, "store", ("notify",))
NOTIFY_STATUS = _compacted("notify-status", 1, "notify", ("store", "notify targets set"))
CORRECTIONS = _compacted("corrections", 1, "store", ("store", "alerts"))

TOPICS: tuple[Topic, ...] = (
    FRAMES,
    PLATES,
    FRAMES_DLQ,
    SIGHTINGS,
    ALERTS,
    VISITS,
    STORE_DLQ,
    NOTIFY_DLQ,
    NOTIFY_DELIVERIES,
    NOTIFY_REPLAYS,
    WATCHLIST,
    CAMERAS,
    CAMERA_STATUS,
    NOTIFY_TARGETS,
    NOTIFY_TESTS,
    NOTIFY_STATUS,
    CORRECTIONS,
)
BY_NAME = {topic.name: topic for topic in TOPICS}


def topic(name: str) -> Topic:
    """The declared topic `name` (KeyError for a name the stack does not know)."""
    return BY_NAME[name]
