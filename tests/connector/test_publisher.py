"""The frames' producer when Kafka cannot keep up: a real librdkafka producer whose broker is not
there, its buffer bounded, so that frames wait in their camera's queue, which drops its oldest."""

from __future__ import annotations

import time

from conftest import weights_dir

from stream_worker.connector.publisher import FramePublisher
from stream_worker.connector.reader import CameraReader, OutFrame, ReaderOptions, ReaderSpec
from stream_worker.contracts.cameras import CameraSource
from stream_worker.launchers.ports import free_port

DASHCAM = weights_dir().parent / "videos" / "dashcam-rain-T404YA47.mp4"


def reader(camera_id: str, queue_frames: int) -> CameraReader:
    """A reader that is never started: the test fills its queue itself."""
    spec = ReaderSpec(camera_id, CameraSource(url=str(DASHCAM)))
    return CameraReader(spec, ReaderOptions(queue_frames=queue_frames))


def put(camera: CameraReader, count: int) -> None:
    for _ in range(count):
        number = camera.stats.queued
        camera.queue.put(
            OutFrame(camera.camera_id, f"{camera.camera_id}:s:{number}", "t", b"jpeg", camera.stats)
        )
        camera.stats.queued += 1


def test_a_full_producer_leaves_frames_in_their_queues_which_drop_their_oldest():
    publisher = FramePublisher(
        {
            "bootstrap.servers": f"127.0.0.1:{free_port()}",
            "queue.buffering.max.messages": 6,
            "message.timeout.ms": 1500,
            "log_level": 0,
        },
        "frames",
    )
    a, b = reader("a", 4), reader("b", 4)
    put(a, 4)
    put(b, 4)
    assert publisher.send([a, b], per_camera=10) == 6  # a's 4, then b's first 2: the buffer is full
    assert len(a.queue) == 0 and len(b.queue) == 1 and publisher.has_pending(b)
    put(b, 10)  # the camera goes on: its queue keeps the newest 4
    assert b.queue.dropped == 7 and len(b.queue) == 4
    assert publisher.send([a, b]) == 0  # still full; nothing lost from the queues but the drops
    # The broker never answers: each frame in the producer fails its delivery, counted per camera.
    deadline = time.monotonic() + 30
    while a.stats.delivery_errors + b.stats.delivery_errors < 6:
        assert time.monotonic() < deadline, (a.stats, b.stats)
        publisher.poll(0.2)
    assert (a.stats.delivery_errors, b.stats.delivery_errors) == (4, 2)
    assert a.stats.published == b.stats.published == 0
    assert publisher.send([a, b]) == 5  # room again: b's pending frame, then its queue
    assert publisher.flush(0) == 5
