"""One producer for every camera's frames (and their status records): it takes frames from the
cameras' queues in turn, never waits when librdkafka's own bounded buffer is full (the frames wait
in their cameras' queues, which drop their oldest), and counts each camera's deliveries.

A frame: key = camera id, value = the JPEG, headers camera_id, frame_id, captured_at (the input
contract's `FrameHeader`); a static marker: the same with an empty value and the header static
(the frame's WIDTHxHEIGHT).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from stream_worker.connector.reader import CameraReader, OutFrame
from stream_worker.contracts.frames import FrameHeader

log = logging.getLogger("stream_worker.connector")

LOG_EVERY_S = 10.0  # a camera's delivery errors are logged at most this often


class FramePublisher:
    def __init__(
        self,
        config: Mapping[str, object],
        frames_topic: str,
        on_delivered: Callable[[str, int, int, float], None] = lambda *_delivered: None,
    ) -> None:
        """`on_delivered(camera_id, partition, offset, captured_s)`: a record the broker stored."""
        self._producer = Producer(dict(config))
        self.topic = frames_topic
        self._on_delivered = on_delivered
        self._pending: dict[int, OutFrame] = {}  # a reader's frame the full producer refused
        self._logged: dict[str, float] = {}
        self.fatal: KafkaError | None = None

    def send(self, readers: Iterable[CameraReader], per_camera: int = 10) -> int:
        """Produce up to `per_camera` frames of each reader's queue; how many were produced."""
        sent = 0
        for reader in readers:
            key = id(reader)
            for _ in range(per_camera):
                frame = self._pending.pop(key, None)
                if frame is None:
                    taken = reader.queue.take(1)
                    if not taken:
                        break
                    frame = taken[0]
                if not self._produce(frame):
                    self._pending[key] = frame  # first of this reader's next turn
                    return sent
                sent += 1
        return sent

    def forget(self, reader: CameraReader) -> None:
        self._pending.pop(id(reader), None)

    def has_pending(self, reader: CameraReader) -> bool:
        return id(reader) in self._pending

    def _produce(self, frame: OutFrame) -> bool:
        headers = [
            (FrameHeader.CAMERA_ID.value, frame.camera_id.encode()),
            (FrameHeader.FRAME_ID.value, frame.frame_id.encode()),
            (FrameHeader.CAPTURED_AT.value, frame.captured_at.encode()),
        ]
        if frame.static is not None:
            headers.append((FrameHeader.STATIC.value, frame.static.encode()))
        stats = frame.stats
        marker = frame.static is not None

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is None:
                if marker:
                    stats.markers += 1
                else:
                    stats.published += 1
                self._on_delivered(frame.camera_id, message.partition(), message.offset(), frame.captured_s)
                return
            stats.delivery_errors += 1
            if error.fatal():
                self.fatal = error
            self._log_error(frame.camera_id, error.str())

        try:
            self._producer.produce(
                self.topic,
                value=frame.jpeg,
                key=frame.camera_id.encode(),
                headers=headers,
                on_delivery=delivered,
            )
        except BufferError:
            return False
        except KafkaException as error:  # refused outright (too large): counted, not retried
            stats.delivery_errors += 1
            self._log_error(frame.camera_id, str(error))
        return True

    def produce_raw(self, topic: str, key: bytes, value: bytes | None, partition: int) -> bool:
        """A status record; False when the producer's buffer is full (it is written next time)."""
        try:
            self._producer.produce(topic, value=value, key=key, partition=partition)
        except BufferError:
            return False
        return True

    def _log_error(self, camera_id: str, error: str) -> None:
        now = time.monotonic()
        if now - self._logged.get(camera_id, -LOG_EVERY_S) >= LOG_EVERY_S:
            self._logged[camera_id] = now
            log.warning("a frame was not delivered", extra={"camera_id": camera_id, "error": error})

    def poll(self, timeout_s: float = 0.0) -> int:
        return self._producer.poll(timeout_s)

    def flush(self, timeout_s: float) -> int:
        return self._producer.flush(timeout_s)

    def __len__(self) -> int:
        return len(self._producer)
