"""The demo's topics carry the declared retention and compaction (contracts/topics.py), on a real
(in-memory) Tansu, whether named by default or for one run on an external broker."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from stream_worker.contracts.topics import FRAMES, NOTIFY_DLQ
from stream_worker.demo import topics as demo_topics
from stream_worker.demo.topics import DemoTopics
from stream_worker.launchers.broker import LocalBroker


@pytest.mark.integration
@pytest.mark.parametrize("run_id", [None, "abc123"])
def test_demo_topics_get_their_declared_retention_or_compaction(run_id: str | None) -> None:
    topics = DemoTopics.for_run(run_id)
    with LocalBroker() as broker:
        demo_topics.create(broker.bootstrap_servers, topics, 2, connector=True)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        names = topics.with_connector(True)
        futures = admin.describe_configs([ConfigResource("topic", name) for name in names])
        configs = {
            resource.name: {k: v.value for k, v in f.result(15).items()} for resource, f in futures.items()
        }
    assert configs[topics.frames]["retention.ms"] == str(FRAMES.retention_ms)
    assert configs[topics.notify_dead_letters]["retention.bytes"] == str(NOTIFY_DLQ.retention_bytes)
    assert set(topics.compacted) == {
        topics.watchlist,
        topics.cameras,
        topics.camera_status,
        topics.notify_targets,
        topics.notify_tests,
        topics.notify_status,
        topics.corrections,
    }
    for name in topics.compacted:
        assert configs[name]["cleanup.policy"] == "compact", name
