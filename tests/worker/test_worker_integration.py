"""Acceptance tests of `stream-worker run` against the real local broker and the real Triton.

The worker runs as a subprocess (`python -m stream_worker run ...`) so that it can be killed with
SIGKILL or stopped with SIGTERM like in production. Every input record is produced to a known
(partition, offset) so that each test can account for every single one in the output or the DLQ.
"""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from service_processes import Record, TopicReader
from service_processes import ServiceProcess as WorkerProcess
from support import edit_distance

from stream_worker.launchers.broker import create_topics

pytestmark = pytest.mark.integration

PARTITIONS = 3
EXPECTED_PLATE = "B840CK197"
MAX_INFLIGHT_BATCHES = 4
MAX_BATCH_FRAMES = 16
WAIT_S = 300.0  # generous bound for "eventually"; the CPU Triton is slow and the cores are shared
INVALID = b"these bytes are not a JPEG"
HUGE_FRAME_BYTES = 1_200_000  # above librdkafka's default message.max.bytes (1 MB)

Source = tuple[int, int]  # (partition, offset) of an input record


@pytest.fixture(scope="module")
def small_jpeg() -> bytes:
    """A tiny plain frame: valid for the pipeline (an event with no plates) and fast on CPU."""
    image = np.full((48, 64, 3), 127, dtype=np.uint8)
    ok, encoded = cv2.imencode(".jpg", image)
    assert ok
    return encoded.tobytes()


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


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(f"{unique_name}-frames", f"{unique_name}-plates", f"{unique_name}-dlq")
    create_topics(kafka_bootstrap, [names.frames, names.plates, names.dlq], PARTITIONS)
    return names


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


@pytest.fixture
def outputs(kafka_bootstrap: str, topics: Topics):
    reader = Outputs(TopicReader(kafka_bootstrap, topics.plates), TopicReader(kafka_bootstrap, topics.dlq))
    yield reader
    reader.close()


# --- the worker process ----------------------------------------------------------------------


@pytest.fixture
def start_worker(tmp_path: Path, kafka_bootstrap: str, topics: Topics, unique_name: str):
    started: list[WorkerProcess] = []

    def start(triton_url: str, *extra: str) -> WorkerProcess:
        args = [
            "--bootstrap-servers",
            kafka_bootstrap,
            "--triton-url",
            triton_url,
            "--group-id",
            f"{unique_name}-group",
            "--input-topic",
            topics.frames,
            "--output-topic",
            topics.plates,
            "--dlq-topic",
            topics.dlq,
            "--session-timeout-ms",
            "6000",
            "--metrics-port",
            "0",
            "--max-batch-frames",
            str(MAX_BATCH_FRAMES),
            "--max-inflight-batches",
            str(MAX_INFLIGHT_BATCHES),
            # The CPU Triton serves one request at a time: a batch may queue behind the others.
            "--triton-timeout-s",
            "300",
            "--retry-max-backoff-s",
            "1",
            *extra,
        ]
        worker = WorkerProcess(args, tmp_path / f"worker-{len(started)}.log").start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.is_running():
            worker.stop(signal.SIGKILL)


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in committed}


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


# --- the acceptance tests --------------------------------------------------------------------


def test_300_frames_one_output_each_same_reading_and_per_camera_order(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, cat_jpeg
):
    pattern = [("car", car_jpeg), ("car", car_jpeg), ("cat", cat_jpeg), ("invalid", INVALID)]
    pattern += [("car", car_jpeg), ("invalid", INVALID)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=6, per_camera=50, pattern=pattern))
    assert len(sent) == 300
    valid = [s for s in sent if s.kind != "invalid"]
    invalid = [s for s in sent if s.kind == "invalid"]

    worker = start_worker(triton_url)
    worker.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "assignment")
    started = time.monotonic()
    outputs.wait_for_all(sent, [worker])
    elapsed = time.monotonic() - started
    print(f"\n300 frames ({len(valid)} valid) in {elapsed:.1f} s: {300 / elapsed:.1f} frames/s")

    assert worker.scrape("/readyz")[0] == 200
    assert worker.metric("stream_worker_frames_in_total") == 300
    assert worker.metric('stream_worker_dead_letters_total{reason="invalid_image"}') == len(invalid)

    # Exactly one PlateEvent per valid frame, one DLQ record per invalid one, nothing else.
    events = [record.event for record in outputs.events.records]
    assert sorted((e["source"]["partition"], e["source"]["offset"]) for e in events) == sorted(
        s.source for s in valid
    )
    assert sorted(record.dlq_source for record in outputs.dlq.records) == sorted(s.source for s in invalid)
    by_source = {s.source: s for s in sent}
    for record in outputs.dlq.records:
        original = by_source[record.dlq_source]
        assert (record.key, record.value) == (original.camera.encode(), INVALID)
        assert record.headers["error.stage"] == b"decode"
        assert record.headers["error.reason"] == b"invalid_image"
        assert record.headers["source.topic"] == topics.frames.encode()
        assert record.headers["frame_id"] == original.frame_id.encode()

    # Every car frame reads the same, whatever batch it rode in.
    def sent_for(event: dict) -> Sent:
        return by_source[(event["source"]["partition"], event["source"]["offset"])]

    car_events = [e for e in events if sent_for(e).kind == "car"]
    readings = {(p["text"], p["confidence"]) for e in car_events for p in e["plates"]}
    assert all(len(e["plates"]) >= 1 for e in car_events)
    assert len(readings) == 1, readings
    [(text, _)] = readings
    assert edit_distance(text, EXPECTED_PLATE) <= 1
    for event in events:
        original = sent_for(event)
        assert (event["camera_id"], event["frame_id"]) == (original.camera, original.frame_id)
        assert event["captured_at"] is not None

    # Per camera, output order (offset order within the camera's output partition) = input order.
    for camera in {s.camera for s in sent}:
        expected = [s.frame_id for s in valid if s.camera == camera]
        records = sorted(
            (r for r in outputs.events.records if r.key == camera.encode()), key=lambda r: r.offset
        )
        assert len({r.partition for r in records}) == 1
        assert [r.event["frame_id"] for r in records] == expected
        dead = sorted((r for r in outputs.dlq.records if r.key == camera.encode()), key=lambda r: r.offset)
        assert [r.headers["frame_id"].decode() for r in dead] == [
            s.frame_id for s in invalid if s.camera == camera
        ]

    assert worker.stop() == 0


def test_sigkill_mid_stream_then_restart_loses_nothing(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, small_jpeg
):
    pattern = [("car", car_jpeg), ("small", small_jpeg), ("car", car_jpeg), ("invalid", INVALID)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=40, pattern=pattern))

    first = start_worker(triton_url)
    outputs.wait_until(lambda: len(outputs.events.records) >= 10, "the first events", [first])
    first.stop(signal.SIGKILL)
    assert len(outputs.sources()) < len(sent), "the kill came too late to test anything"

    second = start_worker(triton_url)
    outputs.wait_for_all(sent, [second])
    assert set(outputs.sources()) == {s.source for s in sent}  # every offset accounted for
    duplicates = assert_duplicates_are_twins(outputs, bound=MAX_INFLIGHT_BATCHES * MAX_BATCH_FRAMES)
    print(f"\nSIGKILL: {duplicates} duplicates (bound {MAX_INFLIGHT_BATCHES * MAX_BATCH_FRAMES})")
    assert second.stop() == 0


def test_replay_after_an_offset_reset_republishes_identical_records(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, small_jpeg, unique_name
):
    """At-least-once means replays: a reprocessed frame must yield the same event_id and content.

    The SIGKILL test rarely meets a duplicate (offsets are committed soon after the broker's ack),
    so this test makes every frame a duplicate on purpose by rewinding the group.
    """
    pattern = [("car", car_jpeg), ("small", small_jpeg), ("invalid", INVALID)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=4, pattern=pattern))
    group = f"{unique_name}-group"

    first = start_worker(triton_url)
    outputs.wait_for_all(sent, [first])
    assert first.stop() == 0
    assert set(outputs.sources().values()) == {1}
    rewind_group(kafka_bootstrap, group, topics.frames)
    assert set(committed_offsets(kafka_bootstrap, group, topics.frames).values()) == {0}

    second = start_worker(triton_url)
    everything = {s.source for s in sent}
    outputs.wait_until(
        lambda: set(outputs.sources()) == everything and set(outputs.sources().values()) == {2},
        "every frame a second time",
        [second],
    )
    assert second.stop() == 0
    outputs.poll()
    assert assert_duplicates_are_twins(outputs, bound=len(sent)) == len(sent)
    assert {s.kind for s in sent} == {"car", "small", "invalid"}  # events with plates, without, dead letters


def test_triton_outage_is_waited_out_without_loss_or_dead_letters(
    kafka_bootstrap, prepared_model_repository, topics, outputs, start_worker, car_jpeg, small_jpeg
):
    from stream_worker.launchers.triton import LocalTriton

    pattern = [("car", car_jpeg), ("small", small_jpeg), ("car", car_jpeg), ("car", car_jpeg)]
    pattern += [("invalid", INVALID)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=20, pattern=pattern))
    invalid = {s.source for s in sent if s.kind == "invalid"}

    with LocalTriton(prepared_model_repository) as triton:  # our own: the session's must stay up
        worker = start_worker(triton.grpc_url)
        outputs.wait_until(lambda: len(outputs.events.records) >= 5, "the first events", [worker])
        triton.stop()
        done_at_stop = len(outputs.sources())
        time.sleep(4)  # several retries at the 1 s --retry-max-backoff-s
        triton.start()
        outputs.wait_for_all(sent, [worker])
        assert worker.metric('stream_worker_triton_errors_total{kind="unavailable"}') >= 1
        assert worker.stop() == 0
    assert done_at_stop < len(sent), "the outage came too late to test anything"
    counts = outputs.sources()
    assert set(counts) == {s.source for s in sent}
    assert set(counts.values()) == {1}  # no restart, so nothing twice
    assert {record.dlq_source for record in outputs.dlq.records} == invalid  # no valid frame in the DLQ


def test_two_workers_split_the_partitions_and_one_takes_over(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, small_jpeg
):
    pattern = [("car", car_jpeg), ("small", small_jpeg), ("car", car_jpeg)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=6, per_camera=10, pattern=pattern))
    everything = [f"{topics.frames}:{p}" for p in range(PARTITIONS)]

    first = start_worker(triton_url)
    first.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "first assignment")
    second = start_worker(triton_url)

    def split() -> bool:
        mine, theirs = first.assignments()[-1], (second.assignments() or [[]])[-1]
        return bool(mine and theirs) and sorted(mine + theirs) == everything

    outputs.wait_until(split, "the partitions split between the workers", [first, second])
    # Fresh frames on every partition, so that both workers have work whatever the first one
    # finished before the split.
    sent += produce(kafka_bootstrap, topics.frames, frames_for(6, 10, pattern, start=10))
    second_busy = lambda: second.metric("stream_worker_events_out_total") > 0  # noqa: E731
    outputs.wait_until(second_busy, "the second worker's events", [first, second])

    assert second.stop(signal.SIGTERM) == 0
    first.wait_for_log(
        lambda line: line.get("msg") == "partitions assigned" and len(line["partitions"]) == PARTITIONS,
        "takeover",
    )
    outputs.wait_for_all(sent, [first])
    assert set(outputs.sources()) == {s.source for s in sent}
    assert_duplicates_are_twins(outputs, bound=MAX_INFLIGHT_BATCHES * MAX_BATCH_FRAMES)
    assert first.stop() == 0


def test_sigterm_drains_commits_and_exits_0_within_the_timeout(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, small_jpeg, unique_name
):
    pattern = [("car", car_jpeg), ("small", small_jpeg), ("invalid", INVALID)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=50, pattern=pattern))
    shutdown_timeout_s = 60.0
    worker = start_worker(triton_url, "--shutdown-timeout-s", str(shutdown_timeout_s))
    outputs.wait_until(lambda: len(outputs.events.records) >= 10, "the first events", [worker])

    signalled = time.monotonic()
    worker.process.send_signal(signal.SIGTERM)
    assert worker.stop(timeout_s=shutdown_timeout_s + 30) == 0
    took = time.monotonic() - signalled
    assert took < shutdown_timeout_s, f"exit took {took:.1f} s"

    outputs.poll()
    outputs.poll()
    committed = committed_offsets(kafka_bootstrap, f"{unique_name}-group", topics.frames)
    processed: dict[int, set[int]] = defaultdict(set)
    for partition, offset in outputs.sources():
        processed[partition].add(offset)
    assert sum(len(offsets) for offsets in processed.values()) < len(sent), "stopped too late to test"
    for partition in range(PARTITIONS):
        # Committed offsets equal processed ones: everything below the commit has its record, nothing above.
        assert processed[partition] == set(range(max(committed[partition], 0))), (partition, committed)
    assert set(Counter(outputs.sources()).values()) <= {1}
    print(f"\nSIGTERM: exited 0 in {took:.1f} s; committed {committed}")


def test_bad_input_is_dead_lettered_with_its_reason_and_never_stops_the_worker(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, small_jpeg
):
    assert len(small_jpeg) < 1000
    cases = [  # (key, value, headers, expected reason or None for an event)
        (b"cam-0", small_jpeg, [], None),
        (b"cam-0", b"\xff\xd8" + b"x" * 2000, [], "frame_too_large"),
        (b"cam-0", None, [], "empty_frame"),
        (None, small_jpeg, [], "missing_camera_id"),
        (b"cam-0", small_jpeg, [("captured_at", b"yesterday")], "invalid_header"),
        (b"cam-0", small_jpeg, [("camera_id", b"\xff\xfe")], "invalid_header"),
        (None, small_jpeg, [("camera_id", b"cam-0")], None),
        (b"cam-0", b"\xff\xd8\xff truncated", [], "invalid_image"),
        (b"cam-0", small_jpeg, [("captured_at", b"1738324800250")], None),
        # Too large for the worker's producer too (its 1 MB message.max.bytes): dead-lettered
        # without the frame, its size in a header.
        (b"cam-0", b"\xff\xd8" + b"x" * HUGE_FRAME_BYTES, [], "frame_too_large"),
    ]
    producer = Producer(
        {"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "message.max.bytes": 2_000_000}
    )
    for key, value, headers in [case[:3] for case in cases]:
        producer.produce(topics.frames, value=value, key=key, partition=0, headers=headers)
    assert producer.flush(60) == 0

    worker = start_worker(triton_url, "--max-frame-bytes", "1000")
    expected = {(0, offset): reason for offset, (*_, reason) in enumerate(cases)}
    outputs.wait_for_all([Sent("cam-0", "", "", b"", source) for source in expected], [worker])

    assert set(outputs.sources().values()) == {1}
    assert {record.event["source"]["offset"] for record in outputs.events.records} == {
        offset for (_, offset), reason in expected.items() if reason is None
    }
    dead = {record.dlq_source: record for record in outputs.dlq.records}
    assert {source: r.headers["error.reason"].decode() for source, r in dead.items()} == {
        source: reason for source, reason in expected.items() if reason is not None
    }
    assert dead[(0, 1)].headers["error.stage"] == b"validate"
    assert dead[(0, 1)].value == cases[1][1]  # the original frame, for inspection or replay
    assert dead[(0, 2)].value is None
    assert dead[(0, 7)].headers["error.stage"] == b"decode"
    assert b"--max-frame-bytes" in dead[(0, 1)].headers["error.detail"]
    assert "error.value_omitted" not in dead[(0, 1)].headers
    assert dead[(0, 9)].value is None
    assert dead[(0, 9)].headers["error.value_omitted"] == str(len(cases[9][1])).encode()
    # A camera's dead letters keep their order too (the keyless one may land on any DLQ partition).
    keyed = sorted((r for r in dead.values() if r.key == b"cam-0"), key=lambda r: r.offset)
    assert len({r.partition for r in keyed}) == 1
    assert [r.dlq_source[1] for r in keyed] == [1, 2, 4, 5, 7, 9]
    assert worker.is_running()
    assert worker.stop() == 0


def test_skip_empty_publishes_only_frames_with_plates_and_still_commits_all(
    kafka_bootstrap, triton_url, topics, outputs, start_worker, car_jpeg, small_jpeg, unique_name
):
    pattern = [("small", small_jpeg), ("car", car_jpeg), ("small", small_jpeg)]
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=3, pattern=pattern))
    cars = {s.source for s in sent if s.kind == "car"}
    worker = start_worker(triton_url, "--skip-empty")
    outputs.wait_until(lambda: set(outputs.sources()) >= cars, "the car events", [worker])
    group = f"{unique_name}-group"
    per_partition = Counter(partition for partition, _ in (s.source for s in sent))
    deadline = time.monotonic() + WAIT_S
    while committed_offsets(kafka_bootstrap, group, topics.frames) != dict(per_partition):
        assert time.monotonic() < deadline, committed_offsets(kafka_bootstrap, group, topics.frames)
        time.sleep(0.5)
    outputs.poll()
    assert set(outputs.sources()) == cars  # the empty frames were committed without an event
    assert all(record.event["plates"] for record in outputs.events.records)
    assert worker.stop() == 0
