"""The plates consumer's gap healing: wired into its rebalance callbacks (reading starts at the
replay position, else at the committed floor) and its polls; a fake consumer in place of
librdkafka's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.sightings.consumer import Assigned, PlatesConsumer
from stream_worker.sightings.settings import load_settings


@pytest.fixture
def plates() -> Iterator[tuple[PlatesConsumer, dict[str, list[Any]]]]:
    settings = load_settings(["--bootstrap-servers=127.0.0.1:1"])
    calls: dict[str, list[Any]] = {"assign": [], "revoke": [], "lost": [], "gap": []}
    consumer = PlatesConsumer(
        settings,
        calls["assign"].append,
        calls["revoke"].append,
        calls["lost"].append,
        lambda _: None,
        calls["gap"].append,
    )  # connects to nothing until it polls
    real = consumer._consumer
    yield consumer, calls
    real.close()


def test_reading_starts_where_the_gaps_are_expected_from(plates, monkeypatch) -> None:
    consumer, calls = plates
    topic = consumer._topic
    fake = FakeConsumer(committed={0: 40, 1: 0})  # partition 2: nothing committed
    consumer._consumer = fake  # type: ignore[assignment]
    monkeypatch.setattr(consumer, "_replay_from", lambda partition, floor: floor - 10)
    consumer._assigned(fake, [TopicPartition(topic, p) for p in (0, 1, 2)])  # type: ignore[arg-type]
    assert calls["assign"] == [[Assigned(0, 40, 30), Assigned(1, 0, None), Assigned(2, None, None)]]
    assert consumer.gaps.expected((topic, 0)) == 30  # the replay
    assert consumer.gaps.expected((topic, 1)) == 0  # the floor
    assert consumer.gaps.expected((topic, 2)) is None  # the first record's
    consumer._revoked(fake, [TopicPartition(topic, 0)])  # type: ignore[arg-type]
    consumer._lost(fake, [TopicPartition(topic, 1)])  # type: ignore[arg-type]
    assert calls["revoke"] == [[0]] and calls["lost"] == [[1]]
    assert consumer.gaps.partitions() == [(topic, 2)]


def test_consume_heals_a_gap_at_the_start_of_reading(plates) -> None:
    consumer, calls = plates
    topic = consumer._topic
    fake = FakeConsumer(
        [
            [FakeMessage(topic, 0, 1), FakeMessage(topic, 0, 2)],  # 0 skipped by the broker
            [FakeMessage(topic, 0, 0), FakeMessage(topic, 0, 1), FakeMessage(topic, 0, 2)],
        ],
        committed={0: 0},
    )
    consumer._consumer = fake  # type: ignore[assignment]
    consumer._assigned(fake, [TopicPartition(topic, 0)])  # type: ignore[arg-type]
    assert consumer.consume(500, 0.1) == []
    assert fake.seeks == [(topic, 0, 0)]
    assert [r.offset for r in consumer.consume(500, 0.1)] == [0, 1, 2]
    assert [g.outcome.value for g in calls["gap"]] == ["healed"]
