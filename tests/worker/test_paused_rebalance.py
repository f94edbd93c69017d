"""Why a partition paused for backpressure and then revoked must be resumed before it is forgotten.

librdkafka keeps a partition's pause through its revocation and a later re-assignment (this test
shows it on the real broker). The consumer forgets a revoked partition's state, its record of
pauses included, so without resuming first a partition given back to it after a rebalance was
never fetched again: `bench chaos` found two partitions stalled for good after worker restarts.
The resume itself is tested in tests/service/test_consumer.py.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from stream_worker.launchers.broker import create_topics


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
