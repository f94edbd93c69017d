"""The services' group consumer (service/consumer.GroupConsumer) over a fake librdkafka consumer:
ownership and assignment epochs through rebalances, backpressure, lag, commits, closing."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka_fakes import FakeConsumer, FakeMessage

from stream_worker.service.consumer import GroupConsumer
from stream_worker.service.kafka import Partition, lag_from_statistics
from stream_worker.service.metrics import ServiceMetrics

TOPIC = "frames"
P0, P1, P2 = (TOPIC, 0), (TOPIC, 1), (TOPIC, 2)


class Offsets(GroupConsumer[tuple[int, int]]):
    """The smallest specialisation: a record is (partition, offset)."""

    def _record(self, message: Any) -> tuple[int, int]:
        return message.partition(), message.offset()


class Calls:
    def __init__(self) -> None:
        self.assign: list[list[Partition]] = []
        self.revoke: list[list[Partition]] = []
        self.lost: list[list[Partition]] = []
        self.owned_during: list[bool] = []  # were the partitions still owned in the callback?


@pytest.fixture
def fake() -> FakeConsumer:
    return FakeConsumer()


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def metrics() -> ServiceMetrics:
    return ServiceMetrics("svc")


@pytest.fixture
def consumer(fake: FakeConsumer, calls: Calls, metrics: ServiceMetrics) -> Offsets:
    def on_revoke(partitions: list[Partition]) -> None:
        calls.revoke.append(partitions)
        calls.owned_during.append(all(made.owns(p) for p in partitions))

    def on_lost(partitions: list[Partition]) -> None:
        calls.lost.append(partitions)
        calls.owned_during.append(any(made.owns(p) for p in partitions))

    made = Offsets({"group.id": "g"}, TOPIC, metrics, calls.assign.append, on_revoke, on_lost, client=fake)
    return made


def assign(fake: FakeConsumer, *partitions: int) -> None:
    fake.rebalance("on_assign", TOPIC, list(partitions))


def revoke(fake: FakeConsumer, *partitions: int) -> None:
    fake.rebalance("on_revoke", TOPIC, list(partitions))


def lose(fake: FakeConsumer, *partitions: int) -> None:
    fake.rebalance("on_lost", TOPIC, list(partitions))


# --- construction ----------------------------------------------------------------------------


def test_it_subscribes_to_its_topic_with_lag_statistics_and_shows_its_counts(
    consumer: Offsets, fake: FakeConsumer, metrics: ServiceMetrics
) -> None:
    assert fake.topics == [TOPIC] and set(fake.callbacks) == {"on_assign", "on_revoke", "on_lost"}
    assert fake.config["group.id"] == "g" and callable(fake.config["stats_cb"])
    sample = metrics.registry.get_sample_value
    assert sample("svc_commit_failures_total", {"topic": TOPIC}) == 0
    assert sample("svc_consumer_offset_gaps_total", {"topic": TOPIC, "outcome": "healed"}) == 0
    assert sample("svc_consumer_offset_gaps_total", {"topic": TOPIC, "outcome": "accepted"}) == 0
    assert consumer.assigned() == [] and not consumer.throttled and not consumer.closing


# --- ownership and epochs ----------------------------------------------------------------------


def test_an_assignment_makes_partitions_owned_with_a_first_epoch(
    consumer: Offsets, fake: FakeConsumer, calls: Calls
) -> None:
    assign(fake, 1, 0)
    assert calls.assign == [[P1, P0]]
    assert consumer.assigned() == [P0, P1]
    assert consumer.owns(P0) and not consumer.owns(P2)
    assert consumer.epoch(P0) == consumer.epoch(P1) == 1
    assert consumer.is_current(P0, 1) and not consumer.is_current(P0, 0) and not consumer.is_current(P2, 1)
    assert consumer.gaps.partitions() == [P1, P0]
    assert fake.assigned == []  # librdkafka assigns them itself: nothing decided here


def test_a_revocation_is_handled_while_still_owned_then_forgotten(
    consumer: Offsets, fake: FakeConsumer, calls: Calls
) -> None:
    assign(fake, 0, 1)
    revoke(fake, 0, 2)  # 2 was never ours: the service hears only of 0
    assert calls.revoke == [[P0]] and calls.owned_during == [True]
    assert consumer.assigned() == [P1] and consumer.gaps.partitions() == [P1]
    assert not consumer.is_current(P0, 1)


def test_a_lost_partition_is_forgotten_before_the_service_hears_of_it(
    consumer: Offsets, fake: FakeConsumer, calls: Calls
) -> None:
    assign(fake, 0, 1)
    lose(fake, 0, 1)
    assert calls.lost == [[P0, P1]] and calls.owned_during == [False]
    assert consumer.assigned() == [] and consumer.gaps.partitions() == []


def test_work_of_an_earlier_assignment_is_never_current_again(consumer: Offsets, fake: FakeConsumer) -> None:
    assign(fake, 0)
    first = consumer.epoch(P0)
    revoke(fake, 0)
    assign(fake, 0)  # given back: owned again, under a new epoch
    assert consumer.owns(P0) and consumer.epoch(P0) > first
    assert not consumer.is_current(P0, first) and consumer.is_current(P0, consumer.epoch(P0))
    lose(fake, 0)
    assign(fake, 0)
    assert len({first, consumer.epoch(P0)}) == 2 and consumer.epoch(P0) == first + 4


# --- backpressure --------------------------------------------------------------------------------


def test_throttle_pauses_at_the_limit_and_resumes_at_half_of_it(
    consumer: Offsets, fake: FakeConsumer, caplog
) -> None:
    assign(fake, 0, 1)
    with caplog.at_level(logging.INFO, "stream_worker.service.consumer"):
        assert consumer.throttle(pending=9, limit=10) is False
        assert fake.paused == []
        assert consumer.throttle(pending=10, limit=10) is True
        assert sorted(fake.paused) == [P0, P1] and consumer.throttled
        assert consumer.throttle(pending=6, limit=10) is True  # above half: still paused
        assert consumer.throttle(pending=12, limit=10) is True
        assert len(fake.paused) == 2  # nothing paused twice
        assert consumer.throttle(pending=5, limit=10) is False
        assert sorted(fake.resumed) == [P0, P1] and not consumer.throttled
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["backpressure: consumption paused", "backpressure: consumption resumed"]


def test_a_partition_assigned_while_paused_is_paused_too(consumer: Offsets, fake: FakeConsumer) -> None:
    assign(fake, 0)
    consumer.throttle(pending=10, limit=10)
    assign(fake, 1)
    assert consumer.throttle(pending=8, limit=10) is True
    assert fake.paused == [P0, P1]


@pytest.mark.parametrize("event", [revoke, lose])
def test_a_paused_partition_is_resumed_before_it_is_forgotten(
    consumer: Offsets, fake: FakeConsumer, event: Any
) -> None:
    """librdkafka keeps a pause through a revocation and a later re-assignment: a partition given
    back after a rebalance would never be fetched again (tests/worker/test_paused_rebalance.py)."""
    assign(fake, 0, 1, 2)
    consumer.throttle(pending=10, limit=10)
    event(fake, 0, 1)
    assert sorted(fake.resumed) == [P0, P1]
    assert consumer.throttled  # 2 stays paused
    assert consumer.throttle(pending=0, limit=10) is False
    assert sorted(fake.resumed) == [P0, P1, P2]  # only the one still owned is resumed now


def test_nothing_is_resumed_while_closing(consumer: Offsets, fake: FakeConsumer) -> None:
    assign(fake, 0)
    consumer.throttle(pending=10, limit=10)
    consumer.close()
    revoke(fake, 0)  # librdkafka revokes during close
    assert consumer.closing and fake.closed and fake.resumed == []
    assert consumer.assigned() == []


def test_a_refused_resume_is_logged_and_the_partition_forgotten(
    consumer: Offsets, fake: FakeConsumer, caplog
) -> None:
    assign(fake, 0)
    consumer.throttle(pending=10, limit=10)
    fake.refuse_resume = True
    with caplog.at_level(logging.WARNING, "stream_worker.service.consumer"):
        lose(fake, 0)
    assert any(r.getMessage() == "could not resume revoked partitions" for r in caplog.records)
    assert consumer.assigned() == [] and not consumer.throttled


def test_pause_all_stops_every_owned_partition(consumer: Offsets, fake: FakeConsumer) -> None:
    assign(fake, 0, 1)
    consumer.pause_all()
    assert sorted(fake.paused) == [P0, P1] and consumer.throttled


# --- lag ----------------------------------------------------------------------------------------


def statistics(lags: dict[int, int], topic: str = TOPIC) -> str:
    partitions = {str(p): {"consumer_lag": lag} for p, lag in lags.items()}
    return orjson.dumps({"topics": {topic: {"partitions": partitions}}}).decode()


def test_lag_comes_from_librdkafka_statistics_for_real_partitions_only() -> None:
    # Partition 2's lag is not known yet; partition -1 is librdkafka's internal unassigned one.
    assert lag_from_statistics(statistics({0: 12, 1: 0, 2: -1, -1: 5})) == {P0: 12, P1: 0}
    assert lag_from_statistics("{}") == {}


def test_lag_is_shown_for_owned_partitions_and_removed_when_they_go(
    consumer: Offsets, fake: FakeConsumer, metrics: ServiceMetrics
) -> None:
    assign(fake, 0, 1)
    fake.config["stats_cb"](statistics({0: 12, 1: 3, 2: 40}))
    lag = lambda p: metrics.registry.get_sample_value(  # noqa: E731
        "svc_consumer_lag", {"topic": TOPIC, "partition": str(p)}
    )
    assert (lag(0), lag(1), lag(2)) == (12, 3, None)
    revoke(fake, 0)
    lose(fake, 1, 2)  # 2 never had a lag shown
    assert (lag(0), lag(1)) == (None, None)


# --- records, commits, the end --------------------------------------------------------------------


def test_consume_hands_out_the_specialisation_s_records_in_order(
    consumer: Offsets, fake: FakeConsumer
) -> None:
    assign(fake, 0)
    fake.batches = [[FakeMessage(TOPIC, 0, 0), FakeMessage(TOPIC, 0, 1), FakeMessage(TOPIC, 0, 0)]]
    assert consumer.consume(10, 0.1) == [(0, 0), (0, 1)]  # the re-delivered 0 dropped


def test_commit_is_synchronous_and_returns_each_partition_s_answer(
    consumer: Offsets, fake: FakeConsumer
) -> None:
    refused = KafkaError(KafkaError.REBALANCE_IN_PROGRESS)
    fake.commit_answers = [{P1: refused}, KafkaException(refused)]
    answer = consumer.commit({P0: 5, P1: 7})
    assert fake.commits == [{P0: 5, P1: 7}]
    assert [(a.topic, a.partition, a.offset, a.error) for a in answer] == [
        (TOPIC, 0, 5, None),
        (TOPIC, 1, 7, refused),
    ]
    with pytest.raises(KafkaException):
        consumer.commit({P0: 6})


def test_committed_positions_leave_out_partitions_without_one(consumer: Offsets, fake: FakeConsumer) -> None:
    fake.committed_offsets = {0: 12, 2: 0}
    assert consumer.committed([P0, P1, P2]) == {P0: 12, P2: 0}


def test_a_commit_answered_with_nothing_is_an_empty_answer(consumer: Offsets, fake: FakeConsumer) -> None:
    fake.commit = lambda offsets, asynchronous: None  # type: ignore[method-assign]
    assert consumer.commit({P0: 5}) == []
