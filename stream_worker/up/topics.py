"""The topics of the stack, by the services' default names (so that `stream-worker cameras set`,
`watchlist add`, `notify targets set`, `produce` and `tail` reach them without a --topic),
created on each start unless they exist: the streams with `partitions` each, the watch list, the
cameras' settings, the operators' corrections, the notify targets and the console's notify test
requests compacted.
The connector creates its own status topic."""

from __future__ import annotations

from stream_worker.cameras.store import DEFAULT_PARTITIONS as CAMERAS_PARTITIONS
from stream_worker.launchers.broker import create_topics
from stream_worker.service.compacted import ensure_compacted_topic

STREAMS = (
    "frames",
    "plates",
    "frames.dlq",
    "sightings",
    "alerts",
    "store.dlq",
    "notify.dlq",
    "notify.deliveries",
)
WATCHLIST = "watchlist"
CAMERAS = "cameras"
CORRECTIONS = "corrections"
NOTIFY_TARGETS = "notify-targets"
NOTIFY_TESTS = "notify-tests"


def create(bootstrap_servers: str, partitions: int) -> None:
    """Idempotent: an existing topic is left as it is (BrokerError, CompactedTopicError)."""
    create_topics(bootstrap_servers, STREAMS, partitions)
    ensure_compacted_topic(bootstrap_servers, WATCHLIST)
    ensure_compacted_topic(bootstrap_servers, CAMERAS, partitions=CAMERAS_PARTITIONS)
    ensure_compacted_topic(bootstrap_servers, CORRECTIONS)
    ensure_compacted_topic(bootstrap_servers, NOTIFY_TARGETS)
    ensure_compacted_topic(bootstrap_servers, NOTIFY_TESTS)
