"""The composition root of `stream-worker run`: consume -> validate -> batch -> infer -> build
event -> publish -> commit, on one main thread plus the inference pool's threads.

Guarantees and how they are kept:
- At-least-once: an offset is committed only after its output or dead-letter record, and those of
  every earlier offset of its partition, are acknowledged (offsets.py), and counts as committed
  only once the broker accepted that partition's commit (service/commits.py). A crash re-reads
  from the last commit; the re-published events carry the same `event_id`.
- Bounded duplicates: a batch holds its in-flight slot until its offsets are committed, so at
  most `max_inflight_batches x max_batch_frames` frames can be published but uncommitted.
- Per-camera order: outcomes are published in offset order per partition (ordering.py), and
  the idempotent producer keeps that order through its retries. (A record the broker refuses
  outright, after all of librdkafka's retries, is published again, possibly out of order.)
- Bounded memory: consumption pauses at `max_pending_frames` read-but-unacknowledged frames
  (service/consumer.py, which also keeps partition ownership and assignment epochs).
- Rebalance: frames of revoked partitions not yet sent to Triton are dropped uncommitted (the
  next owner reads them); their batches in flight get `revoke_timeout_s` to finish, publish and
  commit, else they are dropped too. Results that come back for a partition after that are
  recognised by its assignment epoch and discarded.
- SIGTERM/SIGINT: stop consuming, finish the batches in flight (frames not yet sent stay
  uncommitted), flush, commit, leave the group, exit 0, all within `shutdown_timeout_s`
  (service/deadlines.py).
Every consumer/producer call happens on the main thread; the pool only talks to Triton.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from stream_worker.cameras.following import follow_camera_settings
from stream_worker.cameras.regions import CameraRegions
from stream_worker.contracts import ErrorReason, ErrorStage, ModelInfo
from stream_worker.contracts.plate_formats import Region
from stream_worker.recognition import FrameResult
from stream_worker.service.commits import Committer
from stream_worker.service.dead_letters import is_too_large
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.publisher import Publisher
from stream_worker.triton_client import PlateRecognitionClient, tls_from_files
from stream_worker.worker.batcher import Batcher
from stream_worker.worker.camera_rules import CameraRules
from stream_worker.worker.consumer import FrameConsumer
from stream_worker.worker.events import (
    OutgoingRecord,
    build_event,
    dead_letter_record,
    event_record,
    not_examined_event,
    now_utc,
    rejection_for,
)
from stream_worker.worker.gating import Decided, MotionGating, NotExamined
from stream_worker.worker.inference import (
    BatchJob,
    BatchRunner,
    FrameInput,
    InferenceFailure,
    InferencePool,
    RetryPolicy,
)
from stream_worker.worker.lag import Lag
from stream_worker.worker.metrics import Metrics
from stream_worker.worker.offsets import OffsetTracker, Partition
from stream_worker.worker.ordering import InOrderRelease
from stream_worker.worker.publisher import producer_config
from stream_worker.worker.reading import read_in_region
from stream_worker.worker.settings import WorkerSettings, load_settings
from stream_worker.worker.validate import Frame, InputRecord, Rejection, validate

log = logging.getLogger("stream_worker.worker")

CONSUME_CHUNK = 64  # records per consume() call, at most
BUSY_POLL_S = 0.005  # loop period while batches are out: how soon a finished batch is published
IDLE_POLL_S = 0.1
READY_PROBE_TIMEOUT_S = 2.0


class Worker(LoopService):
    log = log
    started_message = "worker started"
    started_settings = ("input_topic", "cameras_topic", "group_id")

    def __init__(self, settings: WorkerSettings, camera_rules: CameraRules | None = None) -> None:
        """`camera_rules`: each camera's masks, zones, minimum width and plate pictures (the
        `cameras` topic's settings); None: every camera without settings."""
        self.settings = settings
        self.metrics = Metrics()
        super().__init__(settings, self.metrics)
        self.tracker = OffsetTracker()
        self.lag = Lag()
        self.ordering: InOrderRelease[OutgoingRecord | None] = InOrderRelease()
        self.batcher: Batcher[Frame] = Batcher(settings.max_batch_frames, settings.max_batch_wait_ms / 1000)
        self.ready: deque[list[Frame]] = deque()  # closed batches waiting for an in-flight slot
        self.inflight: dict[int, BatchJob] = {}  # submitted, until finished AND committed
        self.finished: set[int] = set()
        self._next_batch_id = 0

        # The settings load while the rest connects; no frame is read before they are (`_turn`).
        self.cameras = follow_camera_settings(
            settings, settings.cameras_topic, self.metrics.camera_settings_skipped.inc
        )
        self.closers.append(self.cameras.close)
        self.camera_rules = camera_rules or CameraRules(
            self.cameras.settings_for, regions=CameraRegions(self.metrics.frames_unknown_region.inc)
        )
        self.gating = MotionGating(self.camera_rules.settings)
        # The model named in the events of frames not examined: the one that answered last.
        self._model = ModelInfo(name=settings.model_name, version="")
        tls = tls_from_files(
            settings.triton_tls_ca_file, settings.triton_tls_cert_file, settings.triton_tls_key_file
        )
        self.client = PlateRecognitionClient(
            settings.triton_url, settings.model_name, settings.triton_timeout_s, tls
        )
        self._probe = PlateRecognitionClient(
            settings.triton_url, settings.model_name, READY_PROBE_TIMEOUT_S, tls
        )
        self._stop_inference = threading.Event()
        runner = BatchRunner(
            self._recognize,
            RetryPolicy(
                settings.retry_initial_backoff_s, settings.retry_max_backoff_s, settings.inference_attempts
            ),
            self._stop_inference,
            on_error=lambda kind, _error: self.metrics.triton_errors.labels(kind).inc(),
            on_request=self._record_request,
            is_ready=self._probe.is_ready,
        )
        self.pool = InferencePool(runner, settings.max_inflight_batches, lambda: self.client.model_version)
        self.publisher = Publisher(producer_config(settings))
        self.consumer = FrameConsumer(settings, self.metrics, self._on_assign, self._on_revoke, self._on_lost)
        self.committer = Committer(self.consumer, self.tracker, self.metrics)

    # --- lifecycle -------------------------------------------------------------------------

    def _turn(self) -> None:
        if not self.cameras.caught_up:  # a frame must never be read without its camera's settings
            self.cameras.wait_until_caught_up(IDLE_POLL_S)
            return
        paused = self.consumer.throttle(self.tracker.pending(), self.settings.max_pending_frames)
        self.metrics.paused.set(1 if paused else 0)
        capacity = self.settings.max_pending_frames - self.tracker.pending()
        for record in self.consumer.consume(min(max(capacity, 1), CONSUME_CHUNK), self._poll_timeout()):
            self.lag.taken(record.produced_ms, time.time(), time.monotonic())
            self._accept(record)
        self.metrics.lag_seconds.set(self.lag.seconds(time.monotonic(), paused))
        self._pump()

    def _finish(self) -> dict[str, int]:
        log.info("stopping: draining in-flight frames", extra={"pending": self.tracker.pending()})
        if self.fatal is None:
            self.consumer.pause_all()
            self._drop_unsent()
            self._drain(self._inflight_settled)
        self._stop_inference.set()
        self.pool.close()
        undelivered = self.publisher.flush(self.deadlines.final_flush_left())
        self.publisher.poll(0)
        self.committer.commit()
        return {"uncommitted_frames": self.tracker.pending(), "undelivered_records": undelivered}

    # --- the pipeline ----------------------------------------------------------------------

    def _accept(self, record: InputRecord) -> None:
        partition = (record.topic, record.partition)
        if not self.consumer.owns(partition):
            return  # fetched before a revocation: its next owner reads it
        last = self.tracker.last_tracked(partition)
        if last is not None and record.offset <= last:
            return  # already taken (a client re-delivery after pause/resume)
        self.tracker.track(partition, record.offset)
        self.ordering.expect(partition, record.offset)
        self.metrics.frames_in.inc()
        checked = validate(record, self.settings.max_frame_bytes, self.consumer.epoch(partition))
        if isinstance(checked, Rejection):
            self.ordering.resolve(partition, record.offset, self._dead_letter(record, checked))
        else:
            self._route(self.gating.check(checked, time.monotonic()))

    def _route(self, decided: list[Decided]) -> None:
        """Frames the motion gate has decided (gating.py): to a batch, or their not-examined event."""
        for item in decided:
            frame = item.frame
            if not self._is_current(frame):
                continue  # its partition was revoked meanwhile: its next owner reads it
            if item.static is not None:
                self.ordering.resolve(
                    frame.partition, frame.record.offset, self._not_examined(frame, item.static)
                )
            elif batch := self.batcher.add(frame):
                self.ready.append(batch)

    def _not_examined(self, frame: Frame, static: NotExamined) -> OutgoingRecord | None:
        """The event of a frame its camera's motion gate kept from Triton (gating.py)."""
        self.metrics.frames_not_examined.labels(frame.camera_id).inc()
        if self.settings.skip_empty:
            return None
        event = not_examined_event(
            frame, static.width, static.height, self._model, now_utc(), time.monotonic()
        )
        return event_record(self.settings.output_topic, event)

    def _dead_letter(self, record: InputRecord, rejection: Rejection) -> OutgoingRecord:
        log.warning(
            "frame dead-lettered",
            extra={
                "stage": rejection.stage.value,
                "reason": rejection.reason.value,
                "detail": rejection.detail,
                "source": record.source_id,
            },
        )
        return dead_letter_record(self.settings.dlq_topic, record, rejection)

    def _pump(self) -> None:
        """One turn of everything after consumption; also used to drain on revoke and shutdown."""
        self._route(self.gating.due(time.monotonic()))
        if batch := self.batcher.poll():
            self.ready.append(batch)
        self._submit_ready()
        self._collect_finished()
        self._publish_released()
        self.publisher.poll(0)
        self.committer.commit()
        self._release_slots()
        self.metrics.pending_frames.set(self.tracker.pending())
        self.metrics.inflight_batches.set(len(self.inflight))
        self.loop_clock.tick()
        self._log_status()

    def _submit_ready(self) -> None:
        while self.ready and len(self.inflight) < self.settings.max_inflight_batches:
            frames = [frame for frame in self.ready.popleft() if self._is_current(frame)]
            if not frames:
                continue
            self._next_batch_id += 1
            inputs = [
                FrameInput(
                    frame.image,
                    self._plate_images(frame.camera_id),
                    self.camera_rules.plate_masks(frame.camera_id),
                    self.camera_rules.region(frame.camera_id),
                    self.camera_rules.detector_scales(frame.camera_id),
                )
                for frame in frames
            ]
            job = BatchJob(self._next_batch_id, frames, inputs)
            self.inflight[job.batch_id] = job
            self.pool.submit(job)

    def _plate_images(self, camera_id: str) -> bool:
        """Pictures for every camera with --plate-images, else for those whose settings ask."""
        return self.settings.plate_images or self.camera_rules.plate_images(camera_id)

    def _recognize(self, inputs: Sequence[FrameInput]) -> list[FrameResult]:
        """Runs on the pool's threads: the frames, asking pictures only for those that want them,
        with their cameras' masks, their regions' recognizers (none named: LPRNet alone) and
        their detector scales (none: Triton's default)."""
        return self.client.recognize(
            [i.image for i in inputs],
            [i.plate_images for i in inputs],
            [i.plate_masks for i in inputs],
            [i.region.recognizers if i.region is not None else () for i in inputs],
            detector_scales=[i.detector_scales for i in inputs],
        )

    def _collect_finished(self) -> None:
        while True:
            try:
                job = self.pool.completed.get_nowait()
            except queue.Empty:
                return
            self.finished.add(job.batch_id)
            if job.results is None:
                continue  # abandoned at shutdown: stays uncommitted
            model = self._model = ModelInfo(name=self.settings.model_name, version=job.model_version)
            for frame, result, sent in zip(job.frames, job.results, job.images, strict=True):
                if self._is_current(frame):
                    outcome = self._outcome(frame, result, model, sent.region)
                    self.ordering.resolve(frame.partition, frame.record.offset, outcome)

    def _outcome(
        self,
        frame: Frame,
        result: FrameResult | InferenceFailure,
        model: ModelInfo,
        region: Region | None = None,
    ) -> OutgoingRecord | None:
        """`region`: the one the frame was sent to Triton with (`FrameInput.region`)."""
        if isinstance(result, InferenceFailure):
            rejection = Rejection(ErrorStage.INFERENCE, ErrorReason.INFERENCE_FAILED, result.detail)
        else:
            rejection = rejection_for(result)
        if rejection is None:
            try:
                kept = self.camera_rules.apply(frame.camera_id, result)
                if kept.masked:
                    self.metrics.plates_masked.labels(frame.camera_id).inc(kept.masked)
                if kept.too_narrow:
                    self.metrics.plates_too_narrow.labels(frame.camera_id).inc(kept.too_narrow)
                unread = self.metrics.plates_unread.labels(frame.camera_id).inc
                readings = read_in_region(region, [plate for plate, _ in kept.plates], unread)
                event = build_event(frame, result, model, now_utc(), time.monotonic(), kept.plates, readings)
            except Exception as error:  # an answer outside the contract must not stop the worker
                log.exception("could not build an event", extra={"source": frame.record.source_id})
                rejection = Rejection(
                    ErrorStage.INFERENCE, ErrorReason.INFERENCE_FAILED, f"bad result: {error}"
                )
            else:
                self.metrics.frame_latency.observe(event.latency_ms / 1000)
                if self.settings.skip_empty and not event.plates:
                    return None
                return event_record(self.settings.output_topic, event)
        return self._dead_letter(frame.record, rejection)

    def _publish_released(self) -> None:
        for partition, offset, record in self.ordering.release():
            if record is None:
                self.tracker.ack(partition, offset)  # --skip-empty: nothing to wait for
            else:
                self._publish(partition, offset, self.consumer.epoch(partition), record)

    def _publish(self, partition: Partition, offset: int, epoch: int, record: OutgoingRecord) -> None:
        def on_delivery(error: KafkaError | None) -> None:
            self._delivered(partition, offset, epoch, record, error)

        try:
            self.publisher.publish(record, on_delivery)
        except KafkaException as error:
            if record.dead_letter_reason is not None and record.value and is_too_large(error):
                self._publish(partition, offset, epoch, record.without_value())
            else:
                raise

    def _delivered(
        self, partition: Partition, offset: int, epoch: int, record: OutgoingRecord, error: KafkaError | None
    ) -> None:
        if error is None:
            if record.dead_letter_reason is None:
                self.metrics.events_out.inc()
            else:
                self.metrics.dead_letters.labels(record.dead_letter_reason.value).inc()
            if self.consumer.is_current(partition, epoch):
                self.tracker.ack(partition, offset)
            return
        self.metrics.publish_errors.inc()
        if error.fatal():
            self.fatal = KafkaException(error)
            return
        log.warning(
            "broker refused a record, publishing it again",
            extra={
                "topic": record.topic,
                "source": f"{partition[0]}:{partition[1]}:{offset}",
                "error": error.str(),
            },
        )
        if record.dead_letter_reason is not None and record.value and is_too_large(error):
            record = record.without_value()
        if self.consumer.is_current(partition, epoch):
            self._publish(partition, offset, epoch, record)

    def _release_slots(self) -> None:
        for batch_id in [b for b in self.finished if self._settled(self.inflight[b])]:
            self.finished.discard(batch_id)
            del self.inflight[batch_id]

    def _settled(self, job: BatchJob, partitions: Collection[Partition] | None = None) -> bool:
        """Finished by its thread and each frame (of `partitions`) committed or no longer ours."""
        frames = [f for f in job.frames if partitions is None or f.partition in partitions]
        if not frames:
            return True
        if job.batch_id not in self.finished:
            return False
        return job.results is None or all(
            not self._is_current(frame) or self.tracker.is_committed(frame.partition, frame.record.offset)
            for frame in frames
        )

    def _is_current(self, frame: Frame) -> bool:
        return self.consumer.is_current(frame.partition, frame.epoch)

    # --- flow control ----------------------------------------------------------------------

    def _poll_timeout(self) -> float:
        if self.inflight or self.ready or len(self.publisher) or self.ordering.waiting():
            return BUSY_POLL_S
        due = self.batcher.seconds_until_due()
        return IDLE_POLL_S if due is None else min(IDLE_POLL_S, max(due, 0.001))

    def _drop_unsent(self, partitions: Collection[Partition] | None = None) -> None:
        """Take the frames not yet sent to Triton (all, or those of `partitions`) out of the pipeline.

        They stay uncommitted and are read again (here or by the next owner). Finishing them
        instead would make a shutdown or a rebalance wait for the whole read-ahead backlog.
        """
        self.gating.drop(partitions)
        if batch := self.batcher.flush():
            self.ready.append(batch)
        kept: deque[list[Frame]] = deque()
        for batch in self.ready:
            if frames := [f for f in batch if partitions is not None and f.partition not in partitions]:
                kept.append(frames)
        self.ready = kept

    def _drain(self, done: Callable[[], bool], until: float = math.inf) -> bool:
        """Pump without consuming until `done()` or `until`; True when done. A stop, also one
        arriving meanwhile, ends it at the stop's drain end (service/deadlines.py)."""
        while True:
            self._pump()
            if done() or self.fatal is not None:
                return done()
            remaining = self.deadlines.drain_left(until)
            if remaining <= 0:
                return False
            self.publisher.poll(min(BUSY_POLL_S, remaining))

    def _inflight_settled(self, partitions: Collection[Partition] | None = None) -> bool:
        return all(self._settled(job, partitions) for job in self.inflight.values())

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, partitions: list[Partition]) -> None:
        log.info("partitions assigned", extra={"partitions": _names(partitions)})

    def _on_revoke(self, revoked: list[Partition]) -> None:
        """Owned partitions being revoked: finish what was sent of them, in the revocation budget."""
        finished = True
        if not self.consumer.closing and self.fatal is None:
            self._drop_unsent(revoked)
            finished = self._drain(lambda: self._inflight_settled(revoked), self.deadlines.revocation_end())
        self.committer.commit()
        dropped = sum(self.tracker.pending(p) for p in revoked)
        self._forget(revoked)
        log.info(
            "partitions revoked",
            extra={"partitions": _names(revoked), "finished": finished, "dropped_uncommitted": dropped},
        )

    def _on_lost(self, partitions: list[Partition]) -> None:
        self._forget(partitions)
        log.warning("partitions lost", extra={"partitions": _names(partitions)})

    def _forget(self, partitions: list[Partition]) -> None:
        self.tracker.forget(partitions)
        self.ordering.forget(partitions)

    # --- observability ---------------------------------------------------------------------

    def _record_request(self, frames: int, seconds: float) -> None:
        self.metrics.batch_size.observe(frames)
        self.metrics.batch_latency.observe(seconds)

    def _status(self) -> dict[str, Any]:
        return {
            "frames_in": self.metrics.registry.get_sample_value("stream_worker_frames_in_total"),
            "events_out": self.metrics.registry.get_sample_value("stream_worker_events_out_total"),
            "pending": self.tracker.pending(),
            "batching": len(self.batcher),
            "ready_batches": len(self.ready),
            "inflight_batches": len(self.inflight),
            "awaiting_order": self.ordering.waiting(),
            "unacked_records": len(self.publisher),
            "paused": self.consumer.throttled,
            "assigned": _names(self.consumer.assigned()),
        }

    def _readiness(self) -> tuple[bool, str]:
        if not self.cameras.caught_up:
            return False, f"reading the camera settings ({self.settings.cameras_topic})"
        assigned = self.consumer.assigned()
        if not assigned:
            return False, "no partitions assigned"
        if not self._probe.is_ready():
            return (
                False,
                f"Triton at {self.settings.triton_url} or model {self.settings.model_name} not ready",
            )
        lag = self.lag.seconds(time.monotonic(), self.consumer.throttled)
        return True, f"{len(assigned)} partitions assigned, Triton ready, lag {lag:.1f} s"


def _names(partitions: Sequence[Partition]) -> list[str]:
    return sorted(f"{topic}:{partition}" for topic, partition in partitions)


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker run`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), build_worker)


def build_worker(settings: WorkerSettings) -> Worker:
    """The worker as `stream-worker run` composes it."""
    return Worker(settings)
