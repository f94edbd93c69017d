"""A partition paused for backpressure and then revoked must be resumed before it is forgotten.

librdkafka keeps a partition's pause through its revocation and a later re-assignment (the first
test shows it on the real broker). The worker forgets a revoked partition's state, its record of
pauses included, so without resuming first a partition given back to it after a rebalance was
never fetched again: `bench chaos` found two partitions stalled for good after worker restarts.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from stream_worker.config import load_settings
from stream_worker.launchers.broker import create_topics
from stream_worker.worker.app import Worker
from stream_worker.worker.offsets import Partition


class RecordingConsumer:
    def __init__(self) -> None:
        self.resumed: list[Partition] = []

    def resume(self, partitions: Iterable[Partition]) -> None:
        self.resumed.extend(partitions)

    def close(self) -> None:
        pass


@pytest.fixture
def worker() -> Iterator[Worker]:
    settings = load_settings(
        ["--bootstrap-servers=127.0.0.1:1", "--triton-url=127.0.0.1:1", "--metrics-port=0", "--group-id=g"]
    )
    worker = Worker(settings)  # connects to nothing until run
    worker.consumer = RecordingConsumer()  # type: ignore[assignment]
    yield worker
    worker.pool.close()


def test_revoked_or_lost_paused_partitions_are_resumed_first(worker: Worker) -> None:
    paused, running, kept = ("frames", 0), ("frames", 1), ("frames", 2)
    for partition in (paused, running, kept):
        worker.epochs[partition] = 1
        worker.assigned.add(partition)
    worker.paused = {paused, kept}
    worker._on_lost([paused, running])
    assert worker.consumer.resumed == [paused]  # type: ignore[attr-defined]
    assert worker.paused == {kept} and worker.assigned == {kept}


def test_nothing_is_resumed_while_the_worker_closes(worker: Worker) -> None:
    partition = ("frames", 0)
    worker.epochs[partition] = 1
    worker.assigned.add(partition)
    worker.paused = {partition}
    worker.closing = True
    worker._on_lost([partition])
    assert worker.consumer.resumed == []  # type: ignore[attr-defined]


def _poll_until(consumers: list[Consumer], done: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the group did not settle in time"
        for consumer in consumers:
            consumer.poll(0.1)


@pytest.mark.integration
def test_librdkafka_keeps_a_pause_through_revocation_and_reassignment(kafka_bootstrap: str) -> None:
    topic = f"paused-{uuid.uuid4().hex[:8]}"
    create_topics(kafka_bootstrap, [topic], 1)
    assigned: dict[str, list[int]] = {}

    def member(name: str) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": kafka_bootstrap,
                "group.id": f"{topic}-group",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
            }
        )

        def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
            assigned[name] = [p.partition for p in partitions]

        def on_revoke(_: Consumer, partitions: list[TopicPartition]) -> None:
            assigned[name] = []

        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        return consumer

    first = member("first")
    _poll_until([first], lambda: assigned.get("first") == [0])
    first.pause([TopicPartition(topic, 0)])
    second = member("second")
    _poll_until(
        [first, second], lambda: "second" in assigned and len(assigned["first"] + assigned["second"]) == 1
    )
    second.close()  # the partition, revoked from the first member at the join, comes back to it
    _poll_until([first], lambda: assigned.get("first") == [0])
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, b"frame", partition=0)
    producer.flush(10)
    deadline, received = time.monotonic() + 5, 0
    while time.monotonic() < deadline:
        message = first.poll(0.2)
        received += message is not None and message.error() is None
    assert received == 0, "still paused after the revocation and re-assignment"
    first.resume([TopicPartition(topic, 0)])
    deadline = time.monotonic() + 15
    while not received and time.monotonic() < deadline:
        message = first.poll(0.2)
        received += message is not None and message.error() is None
    first.close()
    assert received == 1
