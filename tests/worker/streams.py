"""What the worker's integration tests share: producing frames to known (partition, offset)s, and
reading every output record back, so that each test can account for every input."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import service_processes
from confluent_kafka import Consumer, Producer, TopicPartition
from service_processes import Record, TopicReader
from service_processes import ServiceProcess as WorkerProcess

PARTITIONS = 3
EXPECTED_PLATE = "B840CK197"
MAX_INFLIGHT_BATCHES = 4
MAX_BATCH_FRAMES = 16
WAIT_S = 300.0  # generous bound for "eventually"; the CPU Triton is slow and the cores are shared
INVALID = b"these bytes are not a JPEG"
HUGE_FRAME_BYTES = 1_200_000  # above librdkafka's default message.max.bytes (1 MB)

Source = tuple[int, int]  # (partition, offset) of an input record


# --- input -----------------------------------------------------------------------------------


@dataclass
class Sent:
    camera: str
    frame_id: str
    kind: str  # "car", "cat", "small" or "invalid"
    value: bytes
    source: Source = (-1, -1)


@dataclass
class Topics:
    frames: str
    plates: str
    dlq: str


def produce(bootstrap: str, topic: str, frames: list[Sent]) -> list[Sent]:
    """Publish with key = camera id to partition (camera number mod 3); records where each landed."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})

    def landed(sent: Sent):
        def callback(error, message):
            assert error is None, error
            sent.source = (message.partition(), message.offset())

        return callback

    for sent in frames:
        camera_number = int(sent.camera.rsplit("-", 1)[1])
        headers = [("camera_id", sent.camera.encode()), ("frame_id", sent.frame_id.encode())]
        headers.append(("captured_at", str(1_738_324_800_000 + len(sent.frame_id)).encode()))
        producer.produce(
            topic,
            value=sent.value,
            key=sent.camera.encode(),
            partition=camera_number % PARTITIONS,
            headers=headers,
            on_delivery=landed(sent),
        )
        producer.poll(0)
    assert producer.flush(60) == 0
    assert all(sent.source != (-1, -1) for sent in frames)
    return frames


def frames_for(cameras: int, per_camera: int, pattern: list[tuple[str, bytes]], start: int = 0) -> list[Sent]:
    """Interleaved across cameras, each camera cycling through `pattern`."""
    return [
        Sent(f"cam-{c}", f"cam-{c}/{i}", *pattern[(i + c) % len(pattern)])
        for i in range(start, start + per_camera)
        for c in range(cameras)
    ]


# --- output ----------------------------------------------------------------------------------


@dataclass
class Outputs:
    events: TopicReader
    dlq: TopicReader

    def poll(self) -> None:
        self.events.poll(0.3)
        self.dlq.poll(0.3)

    def sources(self) -> Counter[Source]:
        counts: Counter[Source] = Counter()
        for record in self.events.records:
            source = record.event["source"]
            counts[(source["partition"], source["offset"])] += 1
        for record in self.dlq.records:
            counts[record.dlq_source] += 1
        return counts

    def wait_until(self, condition: Callable[[], bool], what: str, workers: list[WorkerProcess]) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            for worker in workers:
                assert worker.is_running(), f"worker exited with {worker.returncode}:\n{worker.log_tail()}"
            logs = "\n".join(f"--- {worker.log_path.name}\n{worker.log_tail()}" for worker in workers)
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{logs}"
            self.poll()

    def wait_for_all(self, sent: list[Sent], workers: list[WorkerProcess]) -> None:
        wanted = {s.source for s in sent}
        self.wait_until(lambda: wanted <= set(self.sources()), f"all {len(wanted)} frames", workers)
        self.poll()  # a moment longer, so that duplicates would show
        self.poll()

    def close(self) -> None:
        self.events.close()
        self.dlq.close()


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    return service_processes.committed_offsets(bootstrap, group, topic, PARTITIONS)


def assert_duplicates_are_twins(outputs: Outputs, bound: int) -> int:
    """Duplicates only within the bound, each with the same event_id and content as its twin."""
    by_source: dict[Source, list[dict]] = defaultdict(list)
    for record in outputs.events.records:
        event = record.event
        by_source[(event["source"]["partition"], event["source"]["offset"])].append(event)
    duplicates = {source: events for source, events in by_source.items() if len(events) > 1}
    dead_by_source: dict[Source, list[Record]] = defaultdict(list)
    for record in outputs.dlq.records:
        dead_by_source[record.dlq_source].append(record)
    dlq_duplicates = {source: records for source, records in dead_by_source.items() if len(records) > 1}
    assert len(duplicates) + len(dlq_duplicates) <= bound
    volatile = ("processed_at", "latency_ms")
    for twins in duplicates.values():
        assert len({event["event_id"] for event in twins}) == 1
        assert len({orjson.dumps({k: v for k, v in e.items() if k not in volatile}) for e in twins}) == 1
    for twins in dlq_duplicates.values():
        assert len({(r.key, r.value, tuple(sorted(r.headers.items()))) for r in twins}) == 1
    return len(duplicates) + len(dlq_duplicates)


def rewind_group(bootstrap: str, group: str, topic: str) -> None:
    """Commit offset 0 on every partition of an idle group: an operator's offset reset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, 0) for p in range(PARTITIONS)], asynchronous=False)
    finally:
        consumer.close()
