"""The topics `up` and `stream-worker broker` create, as contracts/topics.py declares them, on a
real (in-memory) Tansu: every topic, retention on the streams (re-applied to a topic made before),
compaction on the tables."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from stream_worker.contracts.topics import FRAMES, PLATES, TOPICS
from stream_worker.launchers.broker import LocalBroker, create_declared_topics, create_topics
from stream_worker.launchers.commands import broker as broker_command
from stream_worker.up import topics as up_topics
from stream_worker.up.options import duration_ms, format_duration


@pytest.fixture
def bootstrap() -> Iterator[str]:
    with LocalBroker() as broker:
        yield broker.bootstrap_servers


def _configs(bootstrap: str) -> dict[str, dict[str, str]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.describe_configs([ConfigResource("topic", topic.name) for topic in TOPICS])
    return {resource.name: {k: v.value for k, v in f.result(15).items()} for resource, f in futures.items()}


def _partitions(bootstrap: str) -> dict[str, int]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=15).topics
    return {name: len(topic.partitions) for name, topic in metadata.items()}


@pytest.mark.integration
def test_up_creates_every_declared_topic_and_retention_reaches_a_topic_made_before(bootstrap: str) -> None:
    create_topics(bootstrap, [FRAMES.name], 2)  # a data directory from before: no retention
    up_topics.create(bootstrap, 2, frames_retention_ms=180_000)
    configs, partitions = _configs(bootstrap), _partitions(bootstrap)
    assert configs["frames"]["retention.ms"] == "180000"
    assert configs["frames"]["retention.bytes"] == str(FRAMES.retention_bytes)
    # The plates, each with its picture, follow the frames unless told otherwise.
    assert configs["plates"]["retention.ms"] == "180000"
    assert configs["plates"]["retention.bytes"] == str(PLATES.retention_bytes)
    for topic in TOPICS:
        if topic.compacted:
            assert configs[topic.name]["cleanup.policy"] == topic.config()["cleanup.policy"], topic.name
            assert partitions[topic.name] == topic.partitions, topic.name
        else:
            assert partitions[topic.name] == 2, topic.name
            if topic not in (FRAMES, PLATES):
                assert configs[topic.name]["retention.ms"] == str(topic.retention_ms), topic.name
    up_topics.create(bootstrap, 2, frames_retention_ms=180_000, plates_retention_ms=7_200_000)
    assert _configs(bootstrap)["plates"]["retention.ms"] == "7200000"


@pytest.mark.integration
def test_the_broker_command_creates_the_whole_topology_by_default(bootstrap: str) -> None:
    default = inspect.signature(broker_command).parameters["topics"].default.default
    assert default.split(",") == [topic.name for topic in TOPICS]
    create_declared_topics(bootstrap, [*default.split(","), "extra"], 2)
    configs, partitions = _configs(bootstrap), _partitions(bootstrap)
    assert configs["alerts"]["retention.ms"] == str(7 * 24 * 3_600_000)
    assert configs["notify-targets"]["cleanup.policy"] == "compact"
    assert partitions["notify.dlq"] == 2 and partitions["cameras"] == 6 and partitions["extra"] == 2


def test_durations() -> None:
    assert [duration_ms(text) for text in ("90s", "3m", "1h", "1.5h", "7d", "250ms")] == [
        90_000,
        180_000,
        3_600_000,
        5_400_000,
        604_800_000,
        250,
    ]
    for bad in ("", "1", "1w", "-1h", "0m", "h"):
        with pytest.raises(ValueError, match="is not a duration"):
            duration_ms(bad)
    assert [format_duration(ms) for ms in (3_600_000, 180_000, 90_000, 250)] == ["1h", "3m", "90s", "250ms"]
