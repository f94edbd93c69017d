"""A subscribed topic the broker does not have (service/missing_topics.py): said once, by name, and
read within seconds of its creation, not at librdkafka's 5-minute metadata refresh. The rules over
a fake client and clock; the group consumer itself against the real local broker."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaException, Message, Producer

from stream_worker.launchers.broker import create_topics
from stream_worker.service import kafka
from stream_worker.service.consumer import GroupConsumer
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.missing_topics import MissingTopics
from stream_worker.service.settings import ServiceSettings

SEEN_WITHIN_S = 10.0
MISSING = "subscribed topic does not exist: nothing of it is read until it is created"
FOUND = "subscribed topic exists now: reading it"


@dataclass
class TopicMetadata:
    partitions: dict[int, object]
    error: object = None


@dataclass
class Cluster:
    topics: dict[str, TopicMetadata] = field(default_factory=dict)
    asked: int = 0
    down: bool = False

    def list_topics(self, timeout: float) -> Cluster:
        self.asked += 1
        if self.down:
            raise KafkaException("broker down")
        return self


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_missing_topic_is_said_once_by_name(caplog: pytest.LogCaptureFixture) -> None:
    missing = MissingTopics(clock=Clock())
    with caplog.at_level(logging.WARNING, logger="stream_worker.service.missing_topics"):
        missing.saw("alerts")
        missing.saw("alerts")
    assert [(record.getMessage(), record.topic) for record in caplog.records] == [(MISSING, "alerts")]
    assert missing.topics == {"alerts"}


def test_the_broker_is_asked_every_interval_until_the_topic_exists(caplog: pytest.LogCaptureFixture) -> None:
    clock, cluster = Clock(), Cluster()
    missing = MissingTopics(interval_s=2.0, clock=clock)
    assert missing.check(cluster) == [] and cluster.asked == 0  # nothing missing: nothing asked
    missing.saw("alerts")
    clock.now += 1.0
    assert missing.check(cluster) == [] and cluster.asked == 0  # not due yet
    clock.now += 1.0
    assert missing.check(cluster) == [] and cluster.asked == 1
    cluster.topics["alerts"] = TopicMetadata({}, error="UNKNOWN_TOPIC_OR_PART")  # named, not there
    clock.now += 2.0
    assert missing.check(cluster) == [] and cluster.asked == 2
    cluster.down = True
    clock.now += 2.0
    assert missing.check(cluster) == [] and missing.topics == {"alerts"}
    cluster.down = False
    cluster.topics["alerts"] = TopicMetadata({0: object()})
    clock.now += 2.0
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="stream_worker.service.missing_topics"):
        assert missing.check(cluster) == ["alerts"]
    assert missing.topics == set()
    assert [(record.getMessage(), record.topic) for record in caplog.records] == [(FOUND, "alerts")]
    clock.now += 10.0
    assert missing.check(cluster) == [] and cluster.asked == 4  # found: never asked again


class Records(GroupConsumer[tuple[str, int, bytes]]):
    def _record(self, message: Message) -> tuple[str, int, bytes]:
        return message.topic(), message.partition(), message.value()


@pytest.mark.integration
def test_a_topic_created_after_the_consumer_joined_with_its_other_topic_is_read_within_seconds(
    kafka_bootstrap: str, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """One topic there, the other created later: librdkafka alone would look for the second only at
    its metadata refresh (5 minutes), its group already joined with the first."""
    here, late = f"{unique_name}-here", f"{unique_name}-late"
    create_topics(kafka_bootstrap, [here], 2)
    settings = ServiceSettings(bootstrap_servers=kafka_bootstrap, session_timeout_ms=6000)
    assigned: list[tuple[str, int]] = []
    consumer = Records(
        kafka.consumer_config(settings, f"{unique_name}-group"),
        [here, late],
        ServiceMetrics("svc"),
        on_assign=assigned.extend,
        on_revoke=lambda _partitions: None,
        on_lost=lambda _partitions: None,
    )
    try:
        with caplog.at_level(logging.WARNING, logger="stream_worker"):
            deadline = time.monotonic() + 30
            while late not in consumer.missing.topics or (here, 1) not in assigned:
                assert time.monotonic() < deadline, f"no join or no missing topic said: {assigned}"
                assert consumer.consume(10, 0.2) == []
        said = [
            (r.getMessage(), getattr(r, "topic", None))
            for r in caplog.records
            if r.levelno >= logging.WARNING
        ]
        assert said == [(MISSING, late)]

        create_topics(kafka_bootstrap, [late], 2)
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
        producer.produce(late, value=b"first", partition=1)
        assert producer.flush(30) == 0
        produced = time.monotonic()
        records: list[tuple[str, int, bytes]] = []
        while not records and time.monotonic() - produced < SEEN_WITHIN_S + 20:
            records = consumer.consume(10, 0.2)
        waited = time.monotonic() - produced
        assert records == [(late, 1, b"first")], f"nothing in {waited:.1f} s"
        assert waited < SEEN_WITHIN_S, f"read {waited:.1f} s after it was produced"
        print(f"\nthe record produced to the new topic was read {waited:.1f} s later")
        assert {(late, 0), (late, 1)} <= set(assigned) and consumer.missing.topics == set()
    finally:
        consumer.close()
