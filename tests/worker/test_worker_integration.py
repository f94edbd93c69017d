"""Acceptance tests of `stream-worker run` against the real local broker and the real Triton.

The worker runs as a subprocess (`python -m stream_worker run ...`) so that it can be killed with
SIGKILL or stopped with SIGTERM like in production. Every input record is produced to a known
(partition, offset) so that each test can account for every single one in the output or the DLQ.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from support import edit_distance

from tests.worker.streams import (
    EXPECTED_PLATE,
    HUGE_FRAME_BYTES,
    INVALID,
    WAIT_S,
    Sent,
    committed_offsets,
    frames_for,
    produce,
)

pytestmark = pytest.mark.integration


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
    time.sleep(1.0)
    behind = worker.metric("stream_worker_lag_seconds")
    outputs.wait_for_all(sent, [worker])
    elapsed = time.monotonic() - started
    print(f"\n300 frames ({len(valid)} valid) in {elapsed:.1f} s: {300 / elapsed:.1f} frames/s")

    assert behind > 1.0, "the frames were published before the worker started"
    time.sleep(1.5)
    assert worker.metric("stream_worker_lag_seconds") == 0  # every frame offered taken
    status, body = worker.scrape("/readyz")
    assert status == 200 and "lag 0.0 s" in body
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
        # Camera ids outside the contract's (they end up in the console's URL paths).
        (b"x" * 255, small_jpeg, [], "invalid_camera_id"),
        (b"cam-0", small_jpeg, [("camera_id", b"../cameras/gate-1/remove?")], "invalid_camera_id"),
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
    assert [r.dlq_source[1] for r in keyed] == [1, 2, 4, 5, 7, 9, 11]
    assert dead[(0, 10)].headers["error.detail"] == b"camera id has 255 characters, more than 64"
    assert b"'../cameras/gate-1/remove?' is not 1 to 64" in dead[(0, 11)].headers["error.detail"]
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
