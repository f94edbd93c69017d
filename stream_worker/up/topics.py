"""The stack's topics (contracts/topics.py), by the services' default names (so that `stream-worker
cameras set`, `watchlist add`, `notify targets set`, `produce` and `tail` reach them without a
--topic), created on each start unless they exist: the streams with `partitions` each and their
retention (re)applied, so that a data directory made before keeps up with it; the compacted topics
with their declared partitions."""

from __future__ import annotations

from stream_worker.contracts.topics import FRAMES, PLATES, TOPICS, Topic
from stream_worker.launchers.broker import create_topics, set_topic_configs
from stream_worker.service.compacted import ensure_compacted_topic


def stream_configs(
    frames_retention_ms: int, plates_retention_ms: int | None = None
) -> dict[str, dict[str, str]]:
    """Each stream's Kafka configuration: its declared retention, `frames_retention_ms` for frames and
    `plates_retention_ms` (default the frames') for plates, whose pictures make them the second
    largest: on one box both are the window a stopped service can catch up on."""
    chosen = {FRAMES.name: frames_retention_ms, PLATES.name: plates_retention_ms or frames_retention_ms}
    return {topic.name: topic.config(chosen.get(topic.name)) for topic in TOPICS if not topic.compacted}


def trimmed_table_configs() -> dict[str, dict[str, str]]:
    """The configuration of each compacted topic that also has a retention (compact,delete)."""
    return {topic.name: topic.config() for topic in TOPICS if topic.compacted and topic.retention_ms}


def create(
    bootstrap_servers: str, partitions: int, frames_retention_ms: int, plates_retention_ms: int | None = None
) -> None:
    """Idempotent: an existing topic keeps its partitions (BrokerError, CompactedTopicError)."""
    configs = stream_configs(frames_retention_ms, plates_retention_ms)
    for name, config in configs.items():
        create_topics(bootstrap_servers, [name], partitions, config)
    set_topic_configs(bootstrap_servers, configs)
    compacted: list[Topic] = [topic for topic in TOPICS if topic.compacted]
    for topic in compacted:
        ensure_compacted_topic(bootstrap_servers, topic.name, partitions=topic.partitions)
    set_topic_configs(bootstrap_servers, trimmed_table_configs())
