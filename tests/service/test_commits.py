"""Checked commits (service/commits.Committer): what may be committed -> commit -> check each
partition -> mark -> count, with the worker's real offset bookkeeping and a fake consumer."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from kafka_fakes import FakeConsumer

from stream_worker.service.commits import Committer
from stream_worker.service.kafka import Partition
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.offsets import OffsetBook
from stream_worker.sightings.metrics import SightingsMetrics
from stream_worker.worker.metrics import Metrics
from stream_worker.worker.offsets import OffsetTracker

P0, P1, P2 = ("frames", 0), ("frames", 1), ("frames", 2)
REBALANCING = KafkaError(KafkaError.REBALANCE_IN_PROGRESS)


class Target:
    """The consumer side a Committer needs: ownership, and a synchronous commit (the fake's)."""

    def __init__(self, owned: set[Partition], answers: list | None = None) -> None:
        self.owned = owned
        self.client = FakeConsumer(commit_answers=answers)

    def owns(self, partition: Partition) -> bool:
        return partition in self.owned

    def commit(self, positions: Mapping[Partition, int]) -> list[TopicPartition]:
        offsets = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        return self.client.commit(offsets=offsets, asynchronous=False)  # type: ignore[return-value]


def done(tracker: OffsetTracker, partition: Partition, offsets: range) -> None:
    for offset in offsets:
        tracker.track(partition, offset)
        tracker.ack(partition, offset)


def failures(metrics: ServiceMetrics, topic: str = "frames") -> float | None:
    return metrics.registry.get_sample_value("stream_worker_commit_failures_total", {"topic": topic})


def commits(metrics: ServiceMetrics) -> float | None:
    return metrics.registry.get_sample_value("stream_worker_commits_total")


@pytest.fixture
def tracker() -> OffsetTracker:
    return OffsetTracker()


@pytest.fixture
def metrics() -> Metrics:
    m = Metrics()
    m.show_consumed_topic("frames")
    return m


def committer(target: Target, tracker: OffsetTracker, metrics: ServiceMetrics) -> Committer:
    return Committer(target, tracker, metrics)


def test_nothing_committable_makes_no_request(tracker, metrics) -> None:
    target = Target({P0})
    assert committer(target, tracker, metrics).commit() == {}
    assert target.client.commits == []
    assert commits(metrics) == 0 and failures(metrics) == 0


def test_accepted_positions_are_marked_committed_and_counted(tracker, metrics) -> None:
    target = Target({P0, P1})
    done(tracker, P0, range(3))
    done(tracker, P1, range(5))
    assert committer(target, tracker, metrics).commit() == {P0: 3, P1: 5}
    assert target.client.commits == [{P0: 3, P1: 5}]
    assert tracker.committable() == {}
    assert tracker.is_committed(P0, 2) and tracker.is_committed(P1, 4)
    assert commits(metrics) == 1 and failures(metrics) == 0


def test_a_partition_whose_commit_failed_stays_committable_and_is_committed_later(
    tracker, metrics, caplog
) -> None:
    target = Target({P0, P1}, answers=[{P1: REBALANCING}])
    done(tracker, P0, range(3))
    done(tracker, P1, range(5))
    commit = committer(target, tracker, metrics)
    with caplog.at_level(logging.WARNING, "stream_worker.service.commits"):
        assert commit.commit() == {P0: 3}
    assert tracker.committable() == {P1: 5}  # still to commit
    assert tracker.is_committed(P0, 2) and not tracker.is_committed(P1, 4)
    assert failures(metrics) == 1 and commits(metrics) == 1
    [line] = [r for r in caplog.records if r.getMessage() == "partition commit failed"]
    assert (line.topic, line.partition, line.offset) == ("frames", 1, 5)  # type: ignore[attr-defined]
    assert line.error == REBALANCING.str()  # type: ignore[attr-defined]

    assert commit.commit() == {P1: 5}  # the next turn: accepted
    assert target.client.commits == [{P0: 3, P1: 5}, {P1: 5}]
    assert tracker.committable() == {} and tracker.is_committed(P1, 4)
    assert failures(metrics) == 1 and commits(metrics) == 2


def test_a_failed_request_leaves_everything_committable(tracker, metrics, caplog) -> None:
    refused = KafkaException(REBALANCING)
    target = Target({P0, P1}, answers=[refused])
    done(tracker, P0, range(3))
    done(tracker, P1, range(5))
    commit = committer(target, tracker, metrics)
    with caplog.at_level(logging.WARNING, "stream_worker.service.commits"):
        assert commit.commit() == {}
    assert tracker.committable() == {P0: 3, P1: 5}
    assert not tracker.is_committed(P0, 0)
    assert failures(metrics) == 2 and commits(metrics) == 0  # one per partition in the request
    [line] = [r for r in caplog.records if r.getMessage() == "commit failed"]
    assert line.positions == {"frames:0": 3, "frames:1": 5}  # type: ignore[attr-defined]
    assert commit.commit() == {P0: 3, P1: 5}
    assert tracker.committable() == {} and commits(metrics) == 1


def test_every_partition_failing_marks_and_counts_no_commit(tracker, metrics) -> None:
    target = Target({P0, P1}, answers=[{P0: REBALANCING, P1: REBALANCING}])
    done(tracker, P0, range(1))
    done(tracker, P1, range(1))
    assert committer(target, tracker, metrics).commit() == {}
    assert tracker.committable() == {P0: 1, P1: 1}
    assert failures(metrics) == 2 and commits(metrics) == 0


def test_a_failure_is_retried_with_what_became_committable_since(tracker, metrics) -> None:
    target = Target({P0}, answers=[{P0: REBALANCING}])
    commit = committer(target, tracker, metrics)
    done(tracker, P0, range(2))
    assert commit.commit() == {}
    done(tracker, P0, range(2, 4))
    assert commit.commit() == {P0: 4}
    assert target.client.commits == [{P0: 2}, {P0: 4}]


def test_only_owned_partitions_are_committed(tracker, metrics) -> None:
    target = Target({P0})
    done(tracker, P0, range(2))
    done(tracker, P2, range(2))  # revoked meanwhile, say
    assert committer(target, tracker, metrics).commit() == {P0: 2}
    assert target.client.commits == [{P0: 2}]
    assert tracker.committable() == {P2: 2}


def test_an_offset_book_commits_owned_partitions_and_keeps_a_refused_one() -> None:
    metrics = SightingsMetrics()
    metrics.show_consumed_topic("plates")
    target = Target({("plates", 0), ("plates", 1)}, answers=[{("plates", 1): REBALANCING}])
    book = OffsetBook()
    for partition, offset in ((0, 6), (1, 8), (2, 3)):  # partition 2 is not owned
        book.assign(("plates", partition))
        book.consumed(("plates", partition), offset)
    commit = Committer(target, book, metrics)
    assert commit.commit() == {("plates", 0): 7}
    assert target.client.commits == [{("plates", 0): 7, ("plates", 1): 9}]
    assert book.committable() == {("plates", 1): 9, ("plates", 2): 4}
    sample = metrics.registry.get_sample_value
    assert sample("stream_worker_sightings_commit_failures_total", {"topic": "plates"}) == 1
    assert sample("stream_worker_sightings_commits_total") == 1
    assert commit.commit() == {("plates", 1): 9}


@pytest.mark.parametrize(
    ("metrics_type", "name"),
    [
        (Metrics, "stream_worker_commit_failures_total"),
        (SightingsMetrics, "stream_worker_sightings_commit_failures_total"),
    ],
)
def test_commit_failures_are_shown_at_zero_for_the_consumed_topic(
    metrics_type: type[ServiceMetrics], name: str
) -> None:
    m = metrics_type()
    assert m.registry.get_sample_value(name, {"topic": "frames"}) is None
    m.show_consumed_topic("frames")
    assert m.registry.get_sample_value(name, {"topic": "frames"}) == 0
    assert f'{name}{{topic="frames"}} 0.0' in m.render().decode()
