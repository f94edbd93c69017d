"""The consumer wrapper's pure parts: its librdkafka settings, the lag it reads from statistics,
and the gap healing wired into its rebalance callbacks and polls (with a fake consumer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from confluent_kafka import TopicPartition
from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.config import load_settings
from stream_worker.worker.consumer import FrameConsumer, consumer_config, lag_from_statistics


def test_lag_comes_from_librdkafka_statistics_for_real_partitions_only():
    statistics = {
        "topics": {
            "frames": {
                "partitions": {
                    "0": {"consumer_lag": 12},
                    "1": {"consumer_lag": 0},
                    "2": {"consumer_lag": -1},  # unknown yet
                    "-1": {"consumer_lag": 5},  # librdkafka's internal unassigned partition
                }
            }
        }
    }
    assert lag_from_statistics(orjson.dumps(statistics).decode()) == {("frames", 0): 12, ("frames", 1): 0}
    assert lag_from_statistics("{}") == {}


def test_commits_are_manual_and_the_worker_s_own_settings_win():
    settings = load_settings(["--kafka-config", "queued.max.messages.kbytes=2048", "--group-id", "g"])
    config = consumer_config(settings)
    assert config["enable.auto.commit"] is False
    assert config["enable.auto.offset.store"] is False
    assert config["group.id"] == "g"
    assert config["queued.max.messages.kbytes"] == "2048"  # a user setting overrides the default


# --- gap healing wired into the wrapper (a fake consumer in place of librdkafka's) ---------


@pytest.fixture
def frame_consumer() -> Iterator[tuple[FrameConsumer, dict[str, list[Any]]]]:
    settings = load_settings(["--bootstrap-servers=127.0.0.1:1", "--group-id=g"])
    calls: dict[str, list[Any]] = {"assign": [], "revoke": [], "lost": [], "gap": []}
    consumer = FrameConsumer(
        settings,
        calls["assign"].append,
        calls["revoke"].append,
        calls["lost"].append,
        on_lag=lambda _: None,
        on_gap=calls["gap"].append,
    )  # connects to nothing until it polls
    real, consumer._consumer = consumer._consumer, FakeConsumer()  # type: ignore[assignment]
    yield consumer, calls
    real.close()


def test_the_rebalance_callbacks_start_and_forget_gap_tracking(frame_consumer) -> None:
    consumer, calls = frame_consumer
    consumer._assigned(None, [TopicPartition("frames", 0), TopicPartition("frames", 1)])
    assert calls["assign"] == [[("frames", 0), ("frames", 1)]]
    assert consumer.gaps.partitions() == [("frames", 0), ("frames", 1)]
    consumer._revoked(None, [TopicPartition("frames", 0)])
    assert calls["revoke"] == [[("frames", 0)]]
    consumer._lost(None, [TopicPartition("frames", 1)])
    assert calls["lost"] == [[("frames", 1)]]
    assert consumer.gaps.partitions() == []


def test_consume_heals_a_gap_with_a_seek_and_reports_it(frame_consumer) -> None:
    consumer, calls = frame_consumer
    fake = FakeConsumer(
        [
            [FakeMessage("frames", 0, 0), FakeMessage("frames", 0, 2), FakeMessage("frames", 0, 3)],
            [FakeMessage("frames", 0, 1), FakeMessage("frames", 0, 2), FakeMessage("frames", 0, 3)],
        ]
    )
    consumer._consumer = fake  # type: ignore[assignment]
    consumer._assigned(None, [TopicPartition("frames", 0)])
    assert [r.offset for r in consumer.consume(64, 0.1)] == [0]
    assert fake.seeks == [("frames", 0, 1)]
    assert [r.offset for r in consumer.consume(64, 0.1)] == [1, 2, 3]
    [gap] = calls["gap"]
    assert (gap.partition, gap.missing_from, gap.missing_to, gap.outcome.value) == (
        ("frames", 0),
        1,
        1,
        "healed",
    )
