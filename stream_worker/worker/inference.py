"""Runs batches on Triton from a pool of `max_inflight_batches` threads, with the failure policy.

- Triton unavailable (down, restarting, model not ready): wait with capped exponential backoff
  and retry the whole batch, forever. Nothing is committed meanwhile and nothing goes to the DLQ:
  an outage is not the frames' fault.
- Triton rejects a request: if Triton is not ready at that moment, that is an outage as above;
  otherwise retry the frames one by one, so that one poisonous frame cannot sink its
  batch-mates; a frame rejected on its own `attempts` times becomes an `InferenceFailure`.

Daemon threads (not a ThreadPoolExecutor): a request stuck in a dead Triton must not keep the
process alive past the shutdown timeout.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_when_event_set, wait_exponential, wait_random

from stream_worker.contracts.plate_formats import Region
from stream_worker.recognition import FrameResult
from stream_worker.triton_client import TritonUnavailableError

log = logging.getLogger(__name__)

# One result per input, in order. The runner never looks inside the inputs: the worker's are
# `FrameInput`s, the tests' plain bytes.
Recognize = Callable[[Sequence[Any]], list[FrameResult]]


@dataclass(frozen=True, slots=True)
class FrameInput:
    """What Triton gets of one frame: its JPEG, whether its plates' pictures are wanted, its
    camera's masks (JSON polygons, b"" for none) and region (whose recognizers read its plates, and
    whose formats the answer is then read through: kept with the frame so that a settings change
    while it is in Triton cannot mix them; None: `ru`, LPRNet alone) and detector
    scales."""

    image: bytes
    plate_images: bool = False
    plate_masks: bytes = b""
    region: Region | None = None
    detector_scales: tuple[float, ...] = ()  # the camera's own; (): Triton's default


@dataclass(frozen=True, slots=True)
class InferenceFailure:
    """Triton rejected this frame on its own every time."""

    detail: str


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    initial_backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    attempts: int = 3  # per frame, for requests Triton rejects


@dataclass(slots=True)
class BatchJob:
    """A batch on its way through Triton; `results` is filled in by a pool thread."""

    batch_id: int
    frames: list  # validate.Frame; kept opaque here so the policy is testable with plain bytes
    images: list  # what `Recognize` takes per frame: FrameInput in the worker
    results: list[FrameResult | InferenceFailure] | None = None  # None: abandoned at shutdown
    model_version: str = ""


class Abandoned(Exception):
    """The pool is stopping: leave this batch unfinished (its offsets stay uncommitted)."""


class BatchRunner:
    """The failure policy around one `recognize` callable; no threads, so tests drive it directly."""

    def __init__(
        self,
        recognize: Recognize,
        policy: RetryPolicy,
        stop: threading.Event,
        on_error: Callable[[str, Exception], None] = lambda kind, error: None,
        on_request: Callable[[int, float], None] = lambda size, seconds: None,
        is_ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self._recognize = recognize
        self._is_ready = is_ready
        self._policy = policy
        self._stop = stop
        self._on_error = on_error
        self._on_request = on_request

    def _outage(self, error: BaseException) -> bool:
        """Whether `error` is Triton's fault rather than the request's.

        A server going down answers in-flight requests with errors of its own (a BLS step
        failing with "Server not ready", ...): an error while Triton is not ready is an outage.
        """
        if isinstance(error, Abandoned):
            return False
        return isinstance(error, TritonUnavailableError) or not self._is_ready()

    def _when_available(self, images: Sequence[Any]) -> list[FrameResult]:
        """`recognize`, retried across outages until it answers (or the pool stops)."""

        def record_unavailable(retry_state) -> None:  # tenacity's before_sleep hook
            error = retry_state.outcome.exception()
            self._on_error("unavailable", error)
            log.warning(
                "Triton unavailable, retrying",
                extra={"attempt": retry_state.attempt_number, "frames": len(images), "error": str(error)},
            )

        retrying = Retrying(
            retry=retry_if_exception(self._outage),
            # Jitter so that several workers do not hammer a restarting Triton in lockstep.
            wait=wait_exponential(multiplier=self._policy.initial_backoff_s, max=self._policy.max_backoff_s)
            + wait_random(0, self._policy.initial_backoff_s / 2),
            stop=stop_when_event_set(self._stop),
            sleep=self._stop.wait,
            before_sleep=record_unavailable,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    if self._stop.is_set():
                        raise Abandoned
                    started = time.monotonic()
                    results = self._recognize(images)
                    self._on_request(len(images), time.monotonic() - started)
                    return results
        except Exception:
            if self._stop.is_set():
                raise Abandoned from None  # stopped while Triton was down
            raise
        raise AssertionError("unreachable: tenacity either returns or raises")

    def run(self, images: Sequence[Any]) -> list[FrameResult | InferenceFailure]:
        """One result per image, in order. Raises `Abandoned` when the pool stops first."""
        if len(images) == 1:
            return [self._run_alone(images[0])]
        try:
            results = self._when_available(images)
            if len(results) != len(images):
                raise ValueError(f"{len(results)} results for {len(images)} frames")
            return list(results)
        except Abandoned:
            raise
        except Exception as error:
            self._on_error("inference", error)
            log.warning(
                "Triton rejected a batch, retrying its frames one by one",
                extra={"frames": len(images), "error": str(error)},
            )
        return [self._run_alone(image) for image in images]

    def _run_alone(self, image: Any) -> FrameResult | InferenceFailure:
        failures = 0
        while True:
            try:
                results = self._when_available([image])
                if len(results) != 1:
                    raise ValueError(f"{len(results)} results for 1 frame")
                return results[0]
            except Abandoned:
                raise
            except Exception as error:
                failures += 1
                self._on_error("inference", error)
                if failures >= self._policy.attempts:
                    return InferenceFailure(f"rejected by Triton {failures} times, last: {error}")
                if self._stop.wait(self._policy.initial_backoff_s):
                    raise Abandoned from None


class InferencePool:
    """`max_inflight` threads, each running one batch at a time; finished jobs land in `completed`."""

    def __init__(self, runner: BatchRunner, threads: int, model_version: Callable[[], str]) -> None:
        self.completed: queue.SimpleQueue[BatchJob] = queue.SimpleQueue()
        self._runner = runner
        self._model_version = model_version
        self._jobs: queue.SimpleQueue[BatchJob | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"inference-{i}", daemon=True) for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, job: BatchJob) -> None:
        self._jobs.put(job)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job.results = self._runner.run(job.images)
                job.model_version = self._current_version()
            except Abandoned:
                job.results = None
            self.completed.put(job)

    def _current_version(self) -> str:
        try:
            return self._model_version()
        except Exception as error:
            log.warning("could not read the model version", extra={"error": str(error)})
            return ""

    def close(self) -> None:
        """Let the threads exit after their current batch (the runner's stop event abandons it)."""
        for _ in self._threads:
            self._jobs.put(None)
