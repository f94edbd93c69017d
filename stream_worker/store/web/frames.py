"""A recent frame of a camera, to draw its masks and zones over: the newest JPEG among the last
few records of each partition of the frames topic whose camera (header `camera_id`, else the key)
is this one. Static markers (empty values) are skipped. Kept for a short while, so that a page
reload does not read the topic again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import KafkaException, Message, TopicPartition

from stream_worker.contracts.frames import FrameHeader
from stream_worker.service.compacted import CompactedTopicError, side_consumer, topic_partitions

TAIL = 30  # records read back from each partition's end
KEEP_S = 30.0
JPEG_START = b"\xff\xd8"


def _camera_of(message: Message) -> str | None:
    for name, value in message.headers() or []:
        if name == FrameHeader.CAMERA_ID and value:
            return bytes(value).decode("utf-8", "replace")
    key = message.key()
    return key.decode("utf-8", "replace") if key else None


def latest_frame(
    bootstrap_servers: str, topic: str, camera_id: str, config: Mapping[str, str], timeout_s: float
) -> bytes | None:
    """The camera's newest frame in the topic's last TAIL records per partition, or None."""
    consumer = side_consumer(bootstrap_servers, config, "console-frame")
    try:
        partitions = topic_partitions(consumer, topic, timeout_s)
        if not partitions:
            return None
        ends: dict[int, int] = {}
        assignment = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            if high > low:
                ends[partition] = high
                assignment.append(TopicPartition(topic, partition, max(low, high - TAIL)))
        if not assignment:
            return None
        consumer.assign(assignment)
        best: tuple[int, bytes] | None = None
        deadline = time.monotonic() + timeout_s
        while ends and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                if message.error() is not None:
                    continue
                if message.offset() >= ends.get(message.partition(), 0) - 1:
                    ends.pop(message.partition(), None)
                value = message.value()
                if not value or not value.startswith(JPEG_START) or _camera_of(message) != camera_id:
                    continue
                stamp = message.timestamp()[1]
                if best is None or stamp >= best[0]:
                    best = (stamp, value)
        return None if best is None else best[1]
    except (KafkaException, CompactedTopicError):
        return None
    finally:
        consumer.close()


class FrameCache:
    """The latest frame per camera for KEEP_S (None kept too: no frame is an answer)."""

    def __init__(self) -> None:
        self._frames: dict[str, tuple[float, bytes | None]] = {}
        self._lock = threading.Lock()

    def get(self, camera_id: str, read: Callable[[], bytes | None]) -> bytes | None:
        now = time.monotonic()
        with self._lock:
            kept = self._frames.get(camera_id)
        if kept is not None and now - kept[0] < KEEP_S:
            return kept[1]
        frame = read()
        with self._lock:
            if len(self._frames) > 1000:
                self._frames.clear()
            self._frames[camera_id] = (now, frame)
        return frame
