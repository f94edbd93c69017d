"""The inference failure policy (BatchRunner) and the pool, with a scripted stand-in for Triton.

A fake is right here: what is tested is the retry/isolation logic, not Triton; the real server
is exercised by the integration tests.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from stream_worker.recognition import FrameResult
from stream_worker.triton_client import TritonInferenceError, TritonUnavailableError
from stream_worker.worker.inference import (
    Abandoned,
    BatchJob,
    BatchRunner,
    InferenceFailure,
    InferencePool,
    RetryPolicy,
)

FAST = RetryPolicy(initial_backoff_s=0.001, max_backoff_s=0.002, attempts=3)


def ok(image: bytes) -> FrameResult:
    return FrameResult("ok", len(image), 1, ())


class ScriptedTriton:
    """Answers each call from a script of exceptions; `poison` frames fail whenever present."""

    def __init__(self, script: Sequence[Exception] = (), poison: frozenset[bytes] = frozenset()) -> None:
        self.script = list(script)
        self.poison = poison
        self.calls: list[list[bytes]] = []

    def __call__(self, images: Sequence[bytes]) -> list[FrameResult]:
        self.calls.append(list(images))
        if self.script:
            raise self.script.pop(0)
        if self.poison & set(images):
            raise TritonInferenceError("poison")
        return [ok(image) for image in images]


def runner(triton, stop=None, errors=None, policy=FAST) -> BatchRunner:
    return BatchRunner(
        triton,
        policy,
        stop or threading.Event(),
        on_error=lambda kind, error: errors.append(kind) if errors is not None else None,
    )


def test_a_healthy_batch_is_one_request():
    triton = ScriptedTriton()
    assert runner(triton).run([b"a", b"bb"]) == [ok(b"a"), ok(b"bb")]
    assert triton.calls == [[b"a", b"bb"]]


def test_an_outage_is_waited_out_with_the_whole_batch_and_nothing_fails():
    outage = [TritonUnavailableError("down")] * 5
    triton = ScriptedTriton(outage)
    errors: list[str] = []
    assert runner(triton, errors=errors).run([b"a", b"b"]) == [ok(b"a"), ok(b"b")]
    assert triton.calls == [[b"a", b"b"]] * 6  # never split, never given up
    assert errors == ["unavailable"] * 5


def test_a_rejected_batch_is_retried_frame_by_frame_and_only_the_poison_fails():
    triton = ScriptedTriton(poison=frozenset({b"bad"}))
    errors: list[str] = []
    results = runner(triton, errors=errors).run([b"a", b"bad", b"c"])
    assert results[0] == ok(b"a") and results[2] == ok(b"c")
    assert isinstance(results[1], InferenceFailure)
    assert "3 times" in results[1].detail and "poison" in results[1].detail
    assert triton.calls == [[b"a", b"bad", b"c"], [b"a"], [b"bad"], [b"bad"], [b"bad"], [b"c"]]
    assert errors == ["inference"] * 4  # the batch, then the poison frame alone three times


def test_a_one_frame_batch_is_already_alone():
    triton = ScriptedTriton(poison=frozenset({b"bad"}))
    [result] = runner(triton).run([b"bad"])
    assert isinstance(result, InferenceFailure)
    assert triton.calls == [[b"bad"]] * 3


def test_a_transient_rejection_costs_one_attempt_and_then_succeeds():
    triton = ScriptedTriton([TritonInferenceError("flaky"), TritonInferenceError("flaky again")])
    assert runner(triton).run([b"a", b"b"]) == [ok(b"a"), ok(b"b")]
    assert triton.calls == [[b"a", b"b"], [b"a"], [b"a"], [b"b"]]


def test_outages_during_single_frame_retries_do_not_count_as_attempts():
    script = [TritonInferenceError("batch")] + [TritonUnavailableError("down")] * 4
    triton = ScriptedTriton(script)
    results = runner(triton, policy=RetryPolicy(0.001, 0.002, attempts=1)).run([b"a", b"b"])
    assert results == [ok(b"a"), ok(b"b")]


def test_errors_while_triton_is_not_ready_are_an_outage_not_the_frames_fault():
    # A stopping server fails in-flight requests with INTERNAL "Server not ready" errors.
    readiness = iter([False, False, True])
    triton = ScriptedTriton([TritonInferenceError("plate_detector failed: Server not ready")] * 2)
    errors: list[str] = []
    batch_runner = BatchRunner(
        triton,
        FAST,
        threading.Event(),
        on_error=lambda kind, _: errors.append(kind),
        is_ready=lambda: next(readiness),
    )
    assert batch_runner.run([b"a", b"b"]) == [ok(b"a"), ok(b"b")]
    assert triton.calls == [[b"a", b"b"]] * 3  # the whole batch again, never split, never failed
    assert errors == ["unavailable"] * 2


def test_a_rejection_while_triton_is_ready_is_the_request_s_fault():
    triton = ScriptedTriton([TritonInferenceError("bad request")])
    batch_runner = BatchRunner(triton, FAST, threading.Event(), is_ready=lambda: True)
    assert batch_runner.run([b"a", b"b"]) == [ok(b"a"), ok(b"b")]
    assert triton.calls == [[b"a", b"b"], [b"a"], [b"b"]]


def test_unexpected_errors_and_wrong_answer_counts_are_rejections():
    class WrongCount:
        def __call__(self, images):
            return [ok(b"x")] * (len(images) + 1)

    results = runner(WrongCount()).run([b"a", b"b"])
    assert all(isinstance(r, InferenceFailure) for r in results)
    assert "2 results for 1 frame" in results[0].detail


def test_stopping_abandons_a_batch_stuck_in_an_outage():
    stop = threading.Event()

    class DownThenStop:
        calls = 0

        def __call__(self, images):
            self.calls += 1
            if self.calls == 3:
                stop.set()
            raise TritonUnavailableError("down")

    with pytest.raises(Abandoned):
        runner(DownThenStop(), stop=stop, policy=RetryPolicy(0.001, 0.002, 3)).run([b"a"])


def test_backoff_grows_to_the_cap():
    waits: list[float] = []

    class RecordingStop(threading.Event):
        def wait(self, timeout=None):
            waits.append(timeout)
            return False

    triton = ScriptedTriton([TritonUnavailableError("down")] * 8)
    runner(triton, stop=RecordingStop(), policy=RetryPolicy(0.1, 0.8, 3)).run([b"a", b"b"])
    assert len(waits) == 8
    assert 0.1 <= waits[0] <= 0.15  # the initial backoff, plus up to half of it as jitter
    assert 0.2 <= waits[1] <= 0.25
    assert all(w <= 0.8 + 0.05 for w in waits)  # capped (plus jitter)
    assert waits[-1] >= 0.8


def test_the_pool_runs_batches_concurrently_and_reports_each():
    started = threading.Barrier(3, timeout=10)

    def recognize(images):
        started.wait()  # all three batches must be in flight at once to get past this
        return [ok(image) for image in images]

    pool = InferencePool(runner(recognize), threads=3, model_version=lambda: "7")
    for batch_id in range(3):
        pool.submit(BatchJob(batch_id, frames=[None], images=[b"x" * (batch_id + 1)]))
    jobs = sorted((pool.completed.get(timeout=10) for _ in range(3)), key=lambda job: job.batch_id)
    pool.close()
    assert [job.results for job in jobs] == [[ok(b"x")], [ok(b"xx")], [ok(b"xxx")]]
    assert {job.model_version for job in jobs} == {"7"}


def test_the_pool_hands_back_abandoned_batches_as_unfinished():
    stop = threading.Event()
    stop.set()
    pool = InferencePool(runner(ScriptedTriton(), stop=stop), threads=1, model_version=lambda: "1")
    pool.submit(BatchJob(1, frames=[None], images=[b"a"]))
    job = pool.completed.get(timeout=10)
    pool.close()
    assert job.results is None


def test_an_unreadable_model_version_does_not_lose_the_results():
    def version():
        raise TritonUnavailableError("metadata down")

    pool = InferencePool(runner(ScriptedTriton()), threads=1, model_version=version)
    pool.submit(BatchJob(1, frames=[None], images=[b"a"]))
    job = pool.completed.get(timeout=10)
    pool.close()
    assert job.results == [ok(b"a")]
    assert job.model_version == ""
