"""The composition root of `stream-worker connect`: follow the cameras' settings, own a share of the
cameras (a consumer group over the `cameras` topic), run one reader thread per owned camera with a
source, publish their frames through one producer, report each camera's status.

Guarantees and how they are kept:
- A camera added, changed or removed applies within a second or so: the settings follower wakes
  the main loop, which reconciles the readers with the settings (reconcile.py): started, restarted
  when what a reader is built from changed (source, fps, motion, masks), stopped when removed.
- One camera, one replica: a camera is read by the replica that owns its partition of the
  `cameras` topic (ownership.py); a revocation stops its cameras' readers before it returns.
- One camera's failure never touches another: each has its own thread, backoff and bounded queue;
  the main loop never blocks on a camera.
- Live video cannot wait: when Kafka is slower than the cameras, each camera's queue drops its
  oldest frames (counted); memory is bounded by queues x frames, plus librdkafka's buffer. When
  the workers are slower, a live camera publishes fewer frames (shed, counted) so that its frames
  wait at most its `max_delay_s` (shedding.py, on the workers' lag read each second: lag.py).
- SIGTERM/SIGINT: readers stopped, the frames already queued published, the producer flushed
  within `shutdown_timeout_s`, each camera's status written as `stopped`; exit 0.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections import Counter as Tally
from collections.abc import Iterator, Sequence
from typing import Any

from stream_worker.cameras.following import CameraSettingsFollower
from stream_worker.connector.lag import FramesBacklog, GroupPositions
from stream_worker.connector.metrics import CameraFigures, ConnectorMetrics, totals_of
from stream_worker.connector.ownership import Ownership
from stream_worker.connector.partitioner import partition_for
from stream_worker.connector.publisher import FramePublisher
from stream_worker.connector.reader import CameraReader, ReaderOptions, ReaderSpec
from stream_worker.connector.reconcile import plan
from stream_worker.connector.settings import ConnectorSettings, load_settings
from stream_worker.connector.shedding import Shedding
from stream_worker.connector.states import CameraState
from stream_worker.connector.status import RateMeter, snapshot
from stream_worker.contracts.cameras import DEFAULT_MAX_DELAY_S
from stream_worker.contracts.credentials import is_file
from stream_worker.service import kafka
from stream_worker.service.compacted import ensure_compacted_topic, topic_partitions
from stream_worker.service.lifecycle import LoopService, serve

log = logging.getLogger("stream_worker.connector")

RECONCILE_EVERY_S = 1.0  # also without a change: a partition count read late, an ended reader
IDLE_WAIT_S = 0.05  # the loop's longest nap when no frame is waiting
JOIN_ON_REVOKE_S = 2.0  # a revoked camera's reader is waited for this long before the group goes on
SHED_EVERY_S = 0.5  # how often the cameras' allowed rates are decided
POSITIONS_FRESH_S = 10.0  # older positions of the workers (the broker does not answer): lag unknown


class _Camera:
    """A running reader and what its status reporting remembers."""

    def __init__(self, reader: CameraReader) -> None:
        self.reader = reader
        self.decoded = RateMeter()
        self.published = RateMeter()
        self.written_state: CameraState | None = None
        self.written_at = 0.0
        self.offered = RateMeter()
        source = reader.spec.source
        bound = DEFAULT_MAX_DELAY_S if source.max_delay_s is None else source.max_delay_s
        self.shedding = Shedding(source.fps, 0.0 if is_file(source.url) else bound)


class ConnectorService(LoopService):
    log = log
    started_message = "connector started"

    def __init__(self, settings: ConnectorSettings) -> None:
        self.settings = settings
        self.metrics = ConnectorMetrics(self._figures)
        super().__init__(settings, self.metrics)
        self.cameras: dict[str, _Camera] = {}
        self.stopping: list[tuple[CameraReader, bool]] = []  # (reader, its camera was removed)
        self.past_totals: dict[str, Tally[str]] = {}  # counters of a camera's earlier readers
        self.wake = threading.Event()
        self._dirty = True
        self._reconciled_at = 0.0
        self._shed_at = 0.0
        self.backlog = FramesBacklog()
        self.frames_partition: dict[str, int] = {}  # camera id -> its partition of the frames topic
        client = {**settings.kafka_config}
        ensure_compacted_topic(settings.bootstrap_servers, settings.status_topic, client)
        ensure_compacted_topic(
            settings.bootstrap_servers, settings.cameras_topic, client, partitions=settings.cameras_partitions
        )
        status_partitions = topic_partitions(
            _admin(settings.bootstrap_servers, client), settings.status_topic, 30.0
        )
        self.status_partitions = len(status_partitions or [0])
        self.options = ReaderOptions(
            stall_timeout_s=settings.stall_timeout_s,
            open_timeout_s=settings.open_timeout_s,
            backoff_base_s=settings.backoff_base_s,
            backoff_cap_s=settings.backoff_cap_s,
            queue_frames=settings.queue_frames,
            decode_threads=settings.decode_threads,
            static_key_frames_s=settings.static_key_frames_s,
            static_markers=settings.static_markers,
            static_marker_interval_s=settings.static_marker_interval_s,
            hwaccel=settings.hwaccel,
            environ=dict(os.environ),
        )
        self.publisher = FramePublisher(
            kafka.producer_config(
                settings,
                **{
                    "queue.buffering.max.kbytes": settings.producer_buffer_kbytes,
                    "message.max.bytes": settings.max_frame_bytes,
                },
            ),
            settings.frames_topic,
            self._delivered,
        )
        self.positions = GroupPositions(
            kafka.consumer_config(settings, settings.worker_group_id),
            settings.worker_group_id,
            settings.frames_topic,
        ).start()
        self.follower = CameraSettingsFollower(
            settings.bootstrap_servers,
            settings.cameras_topic,
            client,
            on_skipped=self.metrics.skipped_settings.inc,
            on_change=self._settings_changed,
        ).start()
        self.consumer = Ownership(settings, self._on_assign, self._on_revoke)

    # --- lifecycle -------------------------------------------------------------------------

    def _started_fields(self) -> dict[str, Any]:
        return {
            "frames_topic": self.settings.frames_topic,
            "cameras_topic": self.settings.cameras_topic,
            "status_topic": self.settings.status_topic,
            "group_id": self.settings.group_id,
            "replica": self.settings.replica_id,
        }

    def _turn(self) -> None:
        self.consumer.poll()
        now = time.monotonic()
        if self._dirty or now - self._reconciled_at >= RECONCILE_EVERY_S:
            self._reconcile()
        sent = self.publisher.send(self._readers())
        self.publisher.poll(0)
        if self.publisher.fatal is not None:
            from confluent_kafka import KafkaException

            raise KafkaException(self.publisher.fatal)
        self._reap()
        if now - self._shed_at >= SHED_EVERY_S:
            self._shed(now)
        self._write_statuses()
        self.metrics.cameras.set(len(self.cameras))
        self.metrics.owned_partitions.set(len(self.consumer.partitions))
        self.loop_clock.tick()
        self._log_status()
        if not sent:
            self.wake.wait(IDLE_WAIT_S)
            self.wake.clear()

    def _finish(self) -> dict[str, int]:
        for camera in self.cameras.values():
            camera.reader.stop()
        for reader, _ in self.stopping:
            reader.stop()
        self.follower.close()
        self.positions.close()
        join_until = time.monotonic() + min(self.settings.stall_timeout_s + 1, self.deadlines.drain_left())
        for reader in self._readers():
            reader.join(max(0.0, join_until - time.monotonic()))
        while self.publisher.send(self._readers(), per_camera=1000):
            self.publisher.poll(0)
        for camera_id, camera in self.cameras.items():
            self._write_status(camera_id, camera, force=True)
        undelivered = self.publisher.flush(self.deadlines.drain_left())
        queued_left = sum(len(reader.queue) for reader in self._readers())
        return {"undelivered_frames": undelivered, "frames_left_queued": queued_left}

    # --- cameras ---------------------------------------------------------------------------

    def _settings_changed(self, _camera_ids: set[str]) -> None:
        self._dirty = True
        self.wake.set()

    def _reconcile(self) -> None:
        self._reconciled_at = time.monotonic()
        if not self.follower.caught_up or not self.consumer.joined:
            return
        if self.consumer.partition_count is None and not self.consumer.refresh_partition_count():
            return
        self._dirty = False
        settings = self.follower.settings
        wanted = {}
        for camera_id, camera_settings in settings.items():
            spec = ReaderSpec.of(camera_id, camera_settings)
            if spec is not None and self.consumer.owns(camera_id):
                wanted[camera_id] = spec
        running = {camera_id: camera.reader.spec for camera_id, camera in self.cameras.items()}
        changes = plan(wanted, running)
        for camera_id in changes.stop:
            spec = ReaderSpec.of(camera_id, settings[camera_id]) if camera_id in settings else None
            self._stop(camera_id, removed=spec is None)
            log.info("camera stopped", extra={"camera_id": camera_id, "removed": spec is None})
        for camera_id in changes.restart:
            self._stop(camera_id, removed=False)
            self._start(wanted[camera_id])
            log.info("camera restarted: its settings changed", extra={"camera_id": camera_id})
        for camera_id in changes.start:
            self._start(wanted[camera_id])
            log.info(
                "camera started",
                extra={
                    "camera_id": camera_id,
                    "source": wanted[camera_id].source.url,
                    "fps": wanted[camera_id].source.fps,
                },
            )

    def _start(self, spec: ReaderSpec) -> None:
        reader = CameraReader(spec, self.options, self.wake.set)
        self.cameras[spec.camera_id] = _Camera(reader.start())

    def _stop(self, camera_id: str, removed: bool) -> None:
        camera = self.cameras.pop(camera_id)
        camera.reader.stop()
        self.stopping.append((camera.reader, removed))

    def _reap(self) -> None:
        """Forget the stopped readers whose thread ended and whose frames are all sent; a removed
        camera's metrics go with it and its status gets a tombstone."""
        still = []
        for reader, removed in self.stopping:
            if reader.alive or len(reader.queue) or self.publisher.has_pending(reader):
                still.append((reader, removed))
                continue
            camera_id = reader.camera_id
            self.publisher.forget(reader)
            if removed and camera_id not in self.cameras:
                self.past_totals.pop(camera_id, None)
                self._tombstone(camera_id)
            elif camera_id in self.cameras or not removed:
                totals = self.past_totals.setdefault(camera_id, Tally())
                totals.update(totals_of(reader.stats, reader.queue.dropped))
        self.stopping = still

    def _readers(self) -> Iterator[CameraReader]:
        for camera in list(self.cameras.values()):
            yield camera.reader
        for reader, _ in list(self.stopping):
            yield reader

    # --- shedding -------------------------------------------------------------------------

    def _delivered(self, camera_id: str, partition: int, offset: int, captured_s: float) -> None:
        self.frames_partition[camera_id] = partition
        self.backlog.delivered(partition, offset, captured_s)

    def _shed(self, now: float) -> None:
        """Each camera's allowed rate from how long its frames wait for the workers."""
        self._shed_at = now
        read_at = self.positions.read_at
        fresh = read_at > 0 and now - read_at < POSITIONS_FRESH_S
        if fresh:
            self.backlog.observe(self.positions.latest, read_at)
        wall = time.time()
        for camera_id, camera in self.cameras.items():
            partition = self.frames_partition.get(camera_id)
            wait = self.backlog.wait_s(partition, wall) if fresh and partition is not None else None
            limit = camera.shedding.update(wait, now)
            if (limit is None) != (camera.reader.shed_fps is None):
                log.info(
                    "camera shedding frames" if limit is not None else "camera no longer sheds frames",
                    extra={"camera_id": camera_id, "wait_s": None if wait is None else round(wait, 2)},
                )
            camera.reader.shed_fps = limit

    def _delay_s(self, camera_id: str) -> float | None:
        """How long the frames the workers read now of this camera's partition have waited."""
        partition = self.frames_partition.get(camera_id)
        return None if partition is None else self.backlog.age_s(partition, time.time())

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, _partitions: list[int]) -> None:
        self._reconcile()

    def _on_revoke(self, partitions: list[int]) -> None:
        if self.stop_requested_at is not None or self.fatal is not None:
            return  # leaving the group at shutdown: the readers are stopped already
        count = self.consumer.partition_count or 1
        leaving = [c for c in self.cameras if partition_for(c.encode(), count) in set(partitions)]
        for camera_id in leaving:
            self._stop(camera_id, removed=False)
        deadline = time.monotonic() + JOIN_ON_REVOKE_S
        for reader, _ in self.stopping:
            reader.join(max(0.0, deadline - time.monotonic()))
        if leaving:
            log.info("cameras handed over", extra={"cameras": leaving})

    # --- status ----------------------------------------------------------------------------

    def _write_statuses(self) -> None:
        for camera_id, camera in self.cameras.items():
            self._write_status(camera_id, camera)

    def _write_status(self, camera_id: str, camera: _Camera, force: bool = False) -> None:
        stats = camera.reader.stats
        now = time.monotonic()
        due = now - camera.written_at >= self.settings.status_interval_s
        if not (force or due or stats.state is not camera.written_state):
            return
        past = self.past_totals.get(camera_id, Tally())
        wall = time.time()
        record = snapshot(
            camera_id,
            stats,
            camera.reader.queue.dropped,
            camera.reader.spec.source.url,
            self.settings.replica_id,
            (camera.decoded.rate(stats.decoded, wall), camera.published.rate(stats.published, wall)),
            camera.reader.spec.motion is not None,
            wall,
            offered_fps=camera.offered.rate(stats.offered, wall),
            delay_s=self._delay_s(camera_id),
            max_delay_s=camera.shedding.max_delay_s,
        )
        if past:
            record = dataclasses.replace(
                record,
                frames_decoded=record.frames_decoded + past["frames_decoded"],
                frames_published=record.frames_published + past["frames_published"],
                frames_static=record.frames_static + past["frames_static"],
                frames_dropped=record.frames_dropped + past["frames_dropped"],
                reconnects=record.reconnects + past["reconnects"],
                delivery_errors=record.delivery_errors + past["delivery_errors"],
                static_markers=(record.static_markers or 0) + past["static_markers"],
                frames_offered=(record.frames_offered or 0) + past["frames_offered"],
                frames_shed=(record.frames_shed or 0) + past["frames_shed"],
            )
        key = camera_id.encode()
        if self.publisher.produce_raw(
            self.settings.status_topic, key, record.to_json(), partition_for(key, self.status_partitions)
        ):
            camera.written_state = stats.state
            camera.written_at = now
            self.metrics.status_records.inc()

    def _tombstone(self, camera_id: str) -> None:
        key = camera_id.encode()
        self.publisher.produce_raw(
            self.settings.status_topic, key, None, partition_for(key, self.status_partitions)
        )

    # --- observability ---------------------------------------------------------------------

    def _figures(self) -> list[CameraFigures]:
        figures = []
        for camera_id, camera in list(self.cameras.items()):
            reader = camera.reader
            totals = Tally(totals_of(reader.stats, reader.queue.dropped))
            totals.update(self.past_totals.get(camera_id, Tally()))
            figures.append(
                CameraFigures(camera_id, dict(totals), reader.stats, reader.spec.motion is not None)
            )
        return figures

    def _status(self) -> dict[str, Any]:
        states = Tally(camera.reader.stats.state.value for camera in self.cameras.values())
        return {
            "cameras": len(self.cameras),
            "states": dict(states),
            "partitions": sorted(self.consumer.partitions),
            "frames_in_producer": len(self.publisher),
        }

    def _readiness(self) -> tuple[bool, str]:
        if not self.follower.caught_up:
            return False, "camera settings not read yet"
        if not self.consumer.joined:
            return False, f"not in the group of the {self.settings.cameras_topic!r} topic yet"
        return True, f"{len(self.cameras)} cameras, partitions {sorted(self.consumer.partitions)}"


def _admin(bootstrap_servers: str, config: dict[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({**config, "bootstrap.servers": bootstrap_servers})


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker connect`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), ConnectorService)
