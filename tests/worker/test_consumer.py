"""The worker's consumer: its librdkafka settings, its records, and the shared group consumer's
gap healing wired into its rebalance callbacks and polls (with a fake consumer)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.worker.consumer import FrameConsumer, consumer_config
from stream_worker.worker.metrics import Metrics
from stream_worker.worker.settings import load_settings


def test_commits_are_manual_and_the_worker_s_own_settings_win():
    settings = load_settings(["--kafka-config", "queued.max.messages.kbytes=2048", "--group-id", "g"])
    config = consumer_config(settings)
    assert config["enable.auto.commit"] is False
    assert config["enable.auto.offset.store"] is False
    assert config["group.id"] == "g"
    assert config["queued.max.messages.kbytes"] == "2048"  # a user setting overrides the default


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def frames(metrics: Metrics) -> tuple[FrameConsumer, FakeConsumer, dict[str, list[Any]]]:
    settings = load_settings(["--bootstrap-servers=127.0.0.1:1", "--group-id=g", "--input-topic=frames"])
    calls: dict[str, list[Any]] = {"assign": [], "revoke": [], "lost": []}
    fake = FakeConsumer()
    consumer = FrameConsumer(
        settings, metrics, calls["assign"].append, calls["revoke"].append, calls["lost"].append, client=fake
    )
    return consumer, fake, calls


def test_it_reads_the_input_topic_with_the_worker_s_settings(frames) -> None:
    _, fake, _ = frames
    assert fake.topics == ["frames"]
    assert fake.config["group.id"] == "g" and fake.config["enable.auto.commit"] is False


def test_the_rebalance_callbacks_start_and_forget_gap_tracking(frames) -> None:
    consumer, fake, calls = frames
    fake.rebalance("on_assign", "frames", [0, 1])
    assert calls["assign"] == [[("frames", 0), ("frames", 1)]]
    assert consumer.gaps.partitions() == [("frames", 0), ("frames", 1)]
    fake.rebalance("on_revoke", "frames", [0])
    assert calls["revoke"] == [[("frames", 0)]]
    fake.rebalance("on_lost", "frames", [1])
    assert calls["lost"] == [[("frames", 1)]]
    assert consumer.gaps.partitions() == []


def test_records_carry_the_message_and_when_it_was_received(frames) -> None:
    consumer, fake, _ = frames
    fake.rebalance("on_assign", "frames", [0])
    fake.batches = [[FakeMessage("frames", 0, 0, value=b"jpeg")]]
    [record] = consumer.consume(64, 0.1)
    assert (record.topic, record.partition, record.offset, record.value) == ("frames", 0, 0, b"jpeg")
    assert record.headers == [] and record.received_at > 0


def test_consume_heals_a_gap_with_a_seek_and_counts_it(frames, metrics: Metrics) -> None:
    consumer, fake, _ = frames
    fake.batches = [
        [FakeMessage("frames", 0, 0), FakeMessage("frames", 0, 2), FakeMessage("frames", 0, 3)],
        [FakeMessage("frames", 0, 1), FakeMessage("frames", 0, 2), FakeMessage("frames", 0, 3)],
    ]
    fake.rebalance("on_assign", "frames", [0])
    assert [r.offset for r in consumer.consume(64, 0.1)] == [0]
    assert fake.seeks == [("frames", 0, 1)]
    assert [r.offset for r in consumer.consume(64, 0.1)] == [1, 2, 3]
    healed = {"topic": "frames", "outcome": "healed"}
    assert consumer.gaps.counts == {("frames", "healed"): 1}
    assert metrics.registry.get_sample_value("stream_worker_consumer_offset_gaps_total", healed) == 1
