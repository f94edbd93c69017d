"""`stream-worker run` under faults, against the real local broker and the real Triton: a SIGKILL,
an offset reset, a Triton outage, a second worker joining and leaving, a SIGTERM. Each test
accounts for every input record in the output or the DLQ, and for every duplicate.
"""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict

import pytest

from tests.worker.streams import (
    INVALID,
    MAX_BATCH_FRAMES,
    MAX_INFLIGHT_BATCHES,
    PARTITIONS,
    assert_duplicates_are_twins,
    committed_offsets,
    frames_for,
    produce,
    rewind_group,
)

pytestmark = pytest.mark.integration


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
        # One batch in flight: with several, the 55 frames left could all be in requests that the
        # stopping Triton still answers, and the outage would meet no request.
        worker = start_worker(triton.grpc_url, "--max-inflight-batches", "1")
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
    # Enough that the worker is still busy when SIGTERM comes after the first 10 events (with 150 it
    # once finished them all before the test saw the tenth).
    sent = produce(kafka_bootstrap, topics.frames, frames_for(cameras=3, per_camera=200, pattern=pattern))
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
