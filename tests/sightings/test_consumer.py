"""The plates consumer's assignment (reading starts at the replay position, else at the committed
floor, for librdkafka and for gap healing), its callbacks in partition numbers, and its polls; a
fake consumer in place of librdkafka's."""

from __future__ import annotations

from typing import Any

from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.service.records import PlateRecord
from stream_worker.sightings.consumer import Assigned, PlatesConsumer
from stream_worker.sightings.metrics import SightingsMetrics
from stream_worker.sightings.settings import load_settings

TOPIC = "plates"


def plates(fake: FakeConsumer) -> tuple[PlatesConsumer, dict[str, list[Any]]]:
    settings = load_settings(["--bootstrap-servers=127.0.0.1:1", f"--input-topic={TOPIC}"])
    calls: dict[str, list[Any]] = {"assign": [], "revoke": [], "lost": []}
    consumer = PlatesConsumer(
        settings,
        SightingsMetrics(),
        calls["assign"].append,
        calls["revoke"].append,
        calls["lost"].append,
        client=fake,
    )
    return consumer, calls


def test_reading_starts_at_the_replay_else_at_the_floor(monkeypatch) -> None:
    fake = FakeConsumer(committed={0: 40, 1: 0})  # partition 2: nothing committed
    consumer, calls = plates(fake)
    assert "stats_cb" not in consumer._probe_config  # the probe reports no lag
    monkeypatch.setattr(consumer, "_replay_from", lambda partition, floor: floor - 10)
    fake.rebalance("on_assign", TOPIC, [0, 1, 2])
    assert calls["assign"] == [[Assigned(0, 40, 30), Assigned(1, 0, None), Assigned(2, None, None)]]
    # librdkafka is told where to start: the replay for 0, the committed position for the others.
    assert sorted(fake.assigned) == [(TOPIC, 0, 30), (TOPIC, 1, -1001), (TOPIC, 2, -1001)]
    assert consumer.gaps.expected((TOPIC, 0)) == 30  # the replay
    assert consumer.gaps.expected((TOPIC, 1)) == 0  # the floor
    assert consumer.gaps.expected((TOPIC, 2)) is None  # the first record's
    assert consumer.assigned() == [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)]
    fake.rebalance("on_revoke", TOPIC, [0])
    fake.rebalance("on_lost", TOPIC, [1])
    assert calls["revoke"] == [[0]] and calls["lost"] == [[1]]
    assert consumer.gaps.partitions() == [(TOPIC, 2)] and consumer.assigned() == [(TOPIC, 2)]


def test_consume_heals_a_gap_at_the_start_of_reading() -> None:
    fake = FakeConsumer(
        [
            [FakeMessage(TOPIC, 0, 1), FakeMessage(TOPIC, 0, 2)],  # 0 skipped by the broker
            [FakeMessage(TOPIC, 0, 0, value=b"{}"), FakeMessage(TOPIC, 0, 1), FakeMessage(TOPIC, 0, 2)],
        ],
        committed={0: 0},
    )
    consumer, _ = plates(fake)
    fake.rebalance("on_assign", TOPIC, [0])
    assert consumer.consume(500, 0.1) == []
    assert fake.seeks == [(TOPIC, 0, 0)]
    records = consumer.consume(500, 0.1)
    assert [r.offset for r in records] == [0, 1, 2]
    assert records[0] == PlateRecord(0, 0, b"{}")
    assert consumer.gaps.counts == {(TOPIC, "healed"): 1}
