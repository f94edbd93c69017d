"""The camera connector in the demo: its child process (`python -m stream_worker connect`), the frames
it published counted by reading them back from the frames topic, and its cameras' last status.

The demo's publisher does not know the connector's frames, so they are accounted for apart: every
frame of a video camera on the frames topic must come back as a plate event or a dead letter of
that camera. A looped clip never ends, so the connector is stopped (SIGTERM: it publishes what it
queued, flushes, writes each camera's status as `stopped`) when the simulated cameras are done;
its count is final once it has exited and the frames topic has been read to its end. So that the
demo shows a whole pass of each clip whatever its --duration, the stop waits for each clip to
have played once.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from stream_worker.cameras.status import CameraStatus, decode_status
from stream_worker.demo.services import SHUTDOWN_S, ServiceChild
from stream_worker.demo.topics import DemoTopics
from stream_worker.demo.video_cameras import VideoCamera
from stream_worker.service.compacted import end_offsets, read_compacted, side_consumer
from stream_worker.service.topic_reader import TopicReader

FRAMES_BATCH = 50  # frames read back per poll (each a JPEG: the local broker sends them whole)
STATUS_INTERVAL_S = 1.0  # the connector's status records, for the demo's summary
STOP_PATIENCE_S = SHUTDOWN_S + 5.0  # then it is killed
STATUS_READ_TIMEOUT_S = 15.0


def connector_child(common: Sequence[str], group: str, topics: DemoTopics, workdir: Path) -> ServiceChild:
    return ServiceChild(
        "connect",
        [*common, "--group-id", f"{group}-connector", "--frames-topic", topics.frames,
         "--cameras-topic", topics.cameras, "--status-topic", topics.camera_status,
         "--replica-id", "demo", "--status-interval-s", str(STATUS_INTERVAL_S)],
        workdir,
    )  # fmt: skip


class ConnectorFeed:
    """The connector child and the count of its frames; `start_counting()` once the topics exist."""

    def __init__(
        self,
        cameras: Sequence[VideoCamera],
        child: ServiceChild,
        bootstrap: str,
        topics: DemoTopics,
        on_stop: Callable[[], None] = lambda: None,
    ) -> None:
        self.cameras = list(cameras)
        self._on_stop = on_stop  # its exit is no failure from now on
        self.camera_ids = frozenset(camera.camera_id for camera in cameras)
        self.child = child
        self._bootstrap = bootstrap
        self._topics = topics
        self._frame_ids: set[str] = set()  # distinct: a producer's retry may write a frame twice
        self._next: dict[int, int] = {}  # frames partition -> offset after the last record read
        self._reader: TopicReader | None = None
        self._stop_asked_at: float | None = None
        self._gave_up = False
        self._first_frame_at: float | None = None  # when its first frame was read back
        self.clip_s = max((camera.seconds for camera in cameras), default=0.0)
        self.exit_code: int | None = None

    @property
    def frames(self) -> int:
        return len(self._frame_ids)

    def start_counting(self) -> None:
        self._reader = TopicReader(self._bootstrap, [self._topics.frames])

    def poll(self) -> None:
        """Read back what the frames topic got since the last poll."""
        assert self._reader is not None
        for message in self._reader.poll(FRAMES_BATCH, 0.0):
            self._next[message.partition()] = message.offset() + 1
            if (message.key() or b"").decode(errors="replace") not in self.camera_ids:
                continue
            if self._first_frame_at is None:
                self._first_frame_at = time.monotonic()
            headers = dict(message.headers() or [])
            self._frame_ids.add((headers.get("frame_id") or b"").decode(errors="replace"))

    def played_once(self) -> bool:
        """Each clip has played once whole since the connector's first frame came back."""
        started = self._first_frame_at
        return started is not None and time.monotonic() - started >= self.clip_s

    def stop(self) -> None:
        """Ask the connector to stop (once): its cameras end, their last frames are published."""
        if self._stop_asked_at is None and self.child.process is not None:
            self._stop_asked_at = time.monotonic()
            self._on_stop()
            self.child.process.send_signal(signal.SIGTERM)

    @property
    def stop_asked(self) -> bool:
        return self._stop_asked_at is not None

    @property
    def stopping_for_s(self) -> float:
        """Seconds since it was asked to stop (0 before)."""
        return 0.0 if self._stop_asked_at is None else time.monotonic() - self._stop_asked_at

    def settled(self) -> bool:
        """The connector exited and every frame it published has been read back (or `give_up`)."""
        if self._gave_up:
            return True
        if self._stop_asked_at is None:
            return False
        if self.exit_code is None:
            self.exit_code = self.child.exit_code()
            if self.exit_code is None:
                if time.monotonic() - self._stop_asked_at > STOP_PATIENCE_S:
                    self.child.stop()  # killed: what it published is still counted
                return False
        return self._read_to_end()

    def give_up(self) -> None:
        """Count what was read back so far as all there is."""
        self._gave_up = True

    def _read_to_end(self) -> bool:
        self.poll()
        consumer = side_consumer(self._bootstrap, None, "demo-frames-end")
        try:
            ends = end_offsets(consumer, self._topics.frames, 10.0) or {}
        finally:
            consumer.close()
        return all(self._next.get(partition, 0) >= end for partition, end in ends.items() if end > 0)

    def statuses(self) -> list[CameraStatus]:
        """Each video camera's last status record (written at the connector's stop)."""
        snapshot = read_compacted(
            self._bootstrap, self._topics.camera_status, decode_status, None, STATUS_READ_TIMEOUT_S
        )
        return [status for key, status in sorted(snapshot.values.items()) if key in self.camera_ids]

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
