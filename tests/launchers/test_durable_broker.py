"""The durable local broker: a crash of the broker and its storage mid-stream loses nothing.

The producer here is not idempotent: Tansu 0.6.0 advances a producer's sequence number before it
stores the batch, so an idempotent batch in flight at a crash is answered as a duplicate when
retried and is lost (README, Limitations). Plain acks=all retries store it after the restart.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from stream_worker.launchers.broker import LocalBroker, create_topics
from stream_worker.launchers.ports import free_port

RATE_PER_S = 50.0
CRASH_AFTER_READS = 100  # the group has joined and read a while
RECORDS_AFTER_RESTART = 50  # delivered through the restarted broker before the stream ends
COMMIT_EVERY = 25
PARTITIONS = 2
REPO_ROOT = Path(__file__).resolve().parents[2]


class SteadyProducer(threading.Thread):
    """Publishes 0, 1, 2... at a steady rate until stopped; remembers where each one was delivered."""

    def __init__(self, bootstrap_servers: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.delivered: dict[tuple[int, int], int] = {}  # (partition, offset) -> value
        self.errors: list[str] = []
        self.produced = 0
        self.unflushed = -1
        self.stop = threading.Event()
        config = {"bootstrap.servers": bootstrap_servers, "enable.idempotence": False, "acks": "all"}
        self._producer = Producer({**config, "max.in.flight.requests.per.connection": 1, "linger.ms": 5})

    def _on_delivery(self, error: object, message: object) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.delivered[(message.partition(), message.offset())] = int(message.value())  # type: ignore[attr-defined]

    def run(self) -> None:
        started = time.monotonic()
        while not self.stop.is_set():
            time.sleep(max(0.0, started + self.produced / RATE_PER_S - time.monotonic()))
            key, value = f"cam{self.produced % 6}", str(self.produced)
            self._producer.produce(self.topic, key=key, value=value, on_delivery=self._on_delivery)
            self.produced += 1
            self._producer.poll(0)
        self.unflushed = self._producer.flush(60)
        self._producer.close()  # a connected client would hold up the broker's stop by 5 s


def _group_consumer(bootstrap_servers: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 3000,  # a group join takes about half of it on Tansu
            "heartbeat.interval.ms": 500,
        }
    )


def _committed(bootstrap_servers: str, group: str, partitions: list[TopicPartition]) -> dict[int, int]:
    probe = _group_consumer(bootstrap_servers, group)
    try:
        return {tp.partition: tp.offset for tp in probe.committed(partitions, timeout=30) if tp.offset >= 0}
    finally:
        probe.close()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_crash_mid_stream_loses_no_record_and_keeps_committed_offsets(tmp_path: Path) -> None:
    port, topic, group = free_port(), "frames", "workers"
    broker = LocalBroker(port, data_dir=tmp_path / "broker").start()
    try:
        create_topics(broker.bootstrap_servers, [topic], PARTITIONS)
        producer = SteadyProducer(broker.bootstrap_servers, topic)
        consumer = _group_consumer(broker.bootstrap_servers, group)
        consumer.subscribe([topic])
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        read: dict[tuple[int, int], int] = {}  # (partition, offset) -> value, as the consumer saw them
        reads = 0
        committed_before_crash: dict[int, int] = {}
        committed_after_restart: dict[int, int] = {}
        delivered_at_crash = 0
        acknowledged_before_crash: set[int] = set()
        producer.start()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not committed_before_crash and reads >= CRASH_AFTER_READS:
                acknowledged_before_crash = set(producer.delivered.values())
                delivered_at_crash = len(acknowledged_before_crash)
                positions = [tp for tp in consumer.position(partitions) if tp.offset >= 0]
                consumer.commit(offsets=positions, asynchronous=False)
                committed_before_crash = {tp.partition: tp.offset for tp in positions}
                broker.kill()
                broker = LocalBroker(port, data_dir=tmp_path / "broker").start()
                committed_after_restart = _committed(broker.bootstrap_servers, group, partitions)
            if (
                committed_before_crash
                and len(producer.delivered) >= delivered_at_crash + RECORDS_AFTER_RESTART
            ):
                producer.stop.set()
            if not producer.is_alive() and set(producer.delivered) <= set(read):
                break
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            reads += 1
            key = (message.partition(), message.offset())
            assert read.setdefault(key, int(message.value())) == int(message.value())
            if reads % COMMIT_EVERY == 0:
                with contextlib.suppress(KafkaException):  # refused while the group rejoins after the crash
                    consumer.commit(asynchronous=False)
        consumer.close()
        producer.join(timeout=60)

        assert producer.errors == [] and producer.unflushed == 0
        assert {key: read.get(key) for key in producer.delivered} == producer.delivered  # none skipped
        assert set(read.values()) == set(range(producer.produced))  # none lost
        copies = Counter(read.values())  # a retried batch may be stored twice; an acknowledged one never
        assert all(copies[value] == 1 for value in acknowledged_before_crash)
        assert committed_before_crash and committed_after_restart == committed_before_crash
    finally:
        broker.stop()


@pytest.mark.integration
def test_broker_command_durable_keeps_its_data_in_the_given_folder(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    command = [sys.executable, "-m", "stream_worker", "broker", "--durable", "--data-dir", str(data_dir)]
    command += ["--topics", "frames", "--partitions", "3"]
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as cli:
        try:
            banner = cli.stdout.readline() if cli.stdout else ""
            assert f"data in {data_dir}" in banner
            assert len(list(data_dir.glob("tansu/clusters/*/topics/frames/partitions/*/watermark.json"))) == 3
            cli.send_signal(signal.SIGTERM)
            assert cli.wait(timeout=60) == 0
        finally:
            if cli.poll() is None:  # SIGTERM first: a SIGKILL would leave its broker behind
                cli.send_signal(signal.SIGTERM)
                try:
                    cli.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    cli.kill()


@pytest.mark.integration
def test_a_durable_broker_names_both_its_process_groups_and_is_serving_only_with_both(tmp_path: Path) -> None:
    broker = LocalBroker(data_dir=tmp_path / "data").start()
    try:
        tansu, store = broker.pids
        assert tansu == broker.pid and store != tansu
        assert [os.getpgid(pid) for pid in (tansu, store)] == [tansu, store]  # each leads its group
        assert broker.is_serving()
        os.kill(store, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while broker.is_serving() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert broker.is_running() and not broker.is_serving()
    finally:
        broker.stop()
    assert broker.pids == [] and not broker.is_serving()
