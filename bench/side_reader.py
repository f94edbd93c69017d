"""What the benchmarks read the services' output with: whole topics from the beginning, outside any
group (no offsets committed, the services' groups undisturbed), each record handed over with the
wall-clock time its poll returned, on a thread of its own."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

from bench.pipeline import BenchError

# Tansu answers an empty fetch only when this expires (new data does not wake it): 100 ms gives
# ~15 ms of latency resolution for ~2% of a core; 10 ms would cost the broker ~9% of a core,
# stolen from the system measured.
FETCH_WAIT_MS = 100
ASSIGN_TIMEOUT_S = 60.0
BATCH = 500

Handler = Callable[[Message, float], None]  # a record without error, the time.time() it arrived


class SideReader:
    def __init__(self, bootstrap_servers: str, topics: Sequence[str], handle: Handler, name: str) -> None:
        self._bootstrap = bootstrap_servers
        self._topics = list(topics)
        self._handle = handle
        self._stop = threading.Event()
        self._assigned = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Returns once every partition is assigned; raises `BenchError` when they cannot be."""
        self._thread.start()
        if not self._assigned.wait(ASSIGN_TIMEOUT_S) or self._error:
            raise BenchError(f"cannot read the output topics {self._topics}: {self._error}")

    def _run(self) -> None:
        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": self._bootstrap,
                    "group.id": f"bench-reader-{uuid.uuid4().hex}",  # never joined: assign only
                    "enable.auto.commit": False,
                    "fetch.wait.max.ms": FETCH_WAIT_MS,
                }
            )
            metadata = consumer.list_topics(timeout=30).topics
            consumer.assign(
                [
                    TopicPartition(topic, partition, OFFSET_BEGINNING)
                    for topic in self._topics
                    for partition in metadata[topic].partitions
                ]
            )
        except Exception as error:
            self._error = error
            self._assigned.set()
            return
        self._assigned.set()
        try:
            while not self._stop.is_set():
                # poll() returns as soon as one record is there (consume() would wait for all
                # of a batch or its timeout); then whatever else has arrived, without waiting.
                first = consumer.poll(0.2)
                if first is None:
                    continue
                arrived = time.time()
                for message in [first, *consumer.consume(BATCH, 0)]:
                    if message.error() is None:
                        self._handle(message, arrived)
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
