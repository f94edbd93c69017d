"""service/topic_reader.py on the real local broker: a side reader (tail, the demo's viewer) gets
the record the broker skips (scripts/broker_fetch_skip.py's reproduction), in offset order."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from stream_worker.launchers.broker import create_topics
from stream_worker.service.gaps import GapHealer, GapOutcome
from stream_worker.service.topic_reader import TopicNotFoundError, TopicReader
from tests.service.test_gap_healing import HOLD_S, RECORDS, _skip_script


@pytest.mark.integration
def test_a_side_reader_waiting_at_the_end_gets_the_record_the_broker_skipped(unique_name: str) -> None:
    skip = _skip_script()
    topic = f"{unique_name}-events"
    with skip.held_back_broker(HOLD_S) as bootstrap:
        create_topics(bootstrap, [topic], 1)
        reader = TopicReader(bootstrap, [topic])
        offsets: list[int] = []
        done = threading.Event()

        def read() -> None:
            while not done.is_set():
                offsets.extend(message.offset() for message in reader.poll(100, 0.1))

        thread = threading.Thread(target=read)
        thread.start()  # waiting at the end of the partition, as a live viewer does
        try:
            produced = skip.produce_as_two_cameras(
                bootstrap, topic, [str(i).encode() for i in range(RECORDS)]
            )
            deadline = time.monotonic() + 30
            while len(offsets) < RECORDS and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            done.set()
            thread.join()
            reader.close()
    assert sorted(produced.values()) == list(range(RECORDS))
    assert offsets == list(range(RECORDS))
    assert reader.gaps.counts[(topic, GapOutcome.HEALED)] == 1


@pytest.mark.integration
def test_a_missing_topic_is_named(kafka_bootstrap: str, unique_name: str) -> None:
    with pytest.raises(TopicNotFoundError, match=f"{unique_name}-absent"):
        TopicReader(kafka_bootstrap, [f"{unique_name}-absent"])


class CountingHealer(GapHealer):
    """A GapHealer that counts the seeks it asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.seeks_made = 0

    def seeked(self, partition: tuple[str, int]) -> None:
        self.seeks_made += 1
        super().seeked(partition)


@pytest.mark.integration
def test_a_transaction_marker_gap_is_accepted_within_the_bound(
    kafka_bootstrap: str, unique_name: str
) -> None:
    """A committed transaction's marker takes an offset that no consumer ever gets: the gap it
    leaves is real, so it is accepted after the bounded tries, never looped on."""
    topic = f"{unique_name}-transactional"
    create_topics(kafka_bootstrap, [topic], 1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"{unique_name}-tx"})
    producer.init_transactions(30)
    for values in ([b"0", b"1", b"2"], [b"3"]):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        producer.commit_transaction(30)
    healer = CountingHealer()
    reader = TopicReader(kafka_bootstrap, [topic], config={"isolation.level": "read_committed"}, gaps=healer)
    values: list[bytes] = []
    started = time.monotonic()
    try:
        while len(values) < 4 and time.monotonic() - started < 30:
            values += [message.value() for message in reader.poll(100, 0.2)]
        for _ in range(5):  # nothing read again after the gap is settled
            values += [message.value() for message in reader.poll(100, 0.2)]
    finally:
        reader.close()
    assert values == [b"0", b"1", b"2", b"3"]
    assert reader.gaps.counts[(topic, GapOutcome.ACCEPTED)] == 1  # the first transaction's marker
    assert reader.gaps.counts[(topic, GapOutcome.HEALED)] == 0
    assert healer.seeks_made <= healer.max_tries
