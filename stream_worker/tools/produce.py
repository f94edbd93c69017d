"""Publish camera frames to Kafka the way a camera would: one JPEG per record, key = camera id.

`iter_frames` turns JPEG files, folders of JPEGs and video files into `(frame_id, jpeg)` pairs;
`produce_frames` publishes any such pairs (the demo and the benchmarks feed it their own, invalid
bytes included) with the input contract's headers, paced at a frame rate.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from stream_worker.contracts import FrameHeader
from stream_worker.media import MediaError, MediaSupportMissing, opencv, video_jpegs
from stream_worker.service.kafka import delivery_config

log = logging.getLogger(__name__)

JPEG_SUFFIXES = frozenset({".jpg", ".jpeg"})
VIDEO_JPEG_QUALITY = 90


class FrameSourceError(ValueError):
    """A path given to `produce` is neither a JPEG file, a folder, nor a readable video."""


def _video_opencv(path: Path) -> ModuleType:
    try:
        return opencv(f"reading {path} as a video")
    except MediaSupportMissing as error:
        raise FrameSourceError(str(error)) from error


@dataclass(frozen=True)
class ProduceReport:
    sent: int
    failed: int
    bytes_sent: int
    seconds: float
    first_error: str | None = None

    def summary(self) -> str:
        text = f"sent {self.sent} frames ({self.bytes_sent} bytes) in {self.seconds:.2f} s"
        if self.failed:
            text += f"; {self.failed} failed, first error: {self.first_error}"
        return text


def check_sources(paths: Sequence[Path]) -> None:
    """Fail before anything is sent if a path cannot be read as frames."""
    for path in paths:
        if path.is_dir() or (path.is_file() and path.suffix.lower() in JPEG_SUFFIXES):
            continue
        if not path.is_file():
            raise FrameSourceError(f"{path}: no such file or folder")
        cv2 = _video_opencv(path)
        capture = cv2.VideoCapture(str(path))
        try:
            if not capture.isOpened():
                raise FrameSourceError(
                    f"{path}: not a JPEG file (.jpg/.jpeg), a folder, or a video OpenCV can read"
                )
        finally:
            capture.release()


def iter_frames(paths: Sequence[Path], camera_id: str, repeat: int = 1) -> Iterator[tuple[str, bytes]]:
    """`(frame_id, jpeg)` for every frame of `paths`, `repeat` times over; frame ids `<camera>-<seq>`.

    Folders give their JPEG files in name order (other files are skipped with a warning); any
    other file that is not a JPEG is decoded as a video, one JPEG per frame, streamed so that a long
    video never sits in memory.
    """
    sequence = 0
    for _ in range(repeat):
        for path in paths:
            for jpeg in _jpegs_of(path):
                yield f"{camera_id}-{sequence}", jpeg
                sequence += 1


def _jpegs_of(path: Path) -> Iterator[bytes]:
    if path.is_dir():
        for child in sorted(path.iterdir()):
            if child.is_file() and child.suffix.lower() in JPEG_SUFFIXES:
                yield child.read_bytes()
            else:
                log.warning("skipping %s: only .jpg/.jpeg files are published from a folder", child)
    elif path.suffix.lower() in JPEG_SUFFIXES:
        yield path.read_bytes()
    else:
        yield from _video_jpegs(path)


def _video_jpegs(path: Path) -> Iterator[bytes]:
    try:
        yield from video_jpegs(path, VIDEO_JPEG_QUALITY, f"reading {path} as a video")
    except (MediaError, MediaSupportMissing) as error:
        raise FrameSourceError(str(error)) from error


def producer_config(
    bootstrap_servers: str, extra: Mapping[str, str] | None = None, local_broker: bool = False
) -> dict[str, object]:
    """Fully acknowledged, in order: a retried send never reorders a camera's frames (see
    service/kafka.delivery_config; `local_broker` for the embedded broker)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "linger.ms": 5,
        **(extra or {}),
        **delivery_config(local_broker),
    }


def produce_frames(
    frames: Iterable[tuple[str, bytes]],
    *,
    bootstrap_servers: str,
    topic: str,
    camera_id: str,
    fps: float = 0.0,
    config: Mapping[str, str] | None = None,
    flush_timeout_s: float = 60.0,
    local_broker: bool = False,
) -> ProduceReport:
    """Publish `frames` with key and headers per the input contract; fps 0 = as fast as possible.

    Waits for every delivery report; undelivered frames are counted in `failed`, never ignored.
    """
    producer = Producer(producer_config(bootstrap_servers, config, local_broker))
    outcome = _DeliveryTally()
    key = camera_id.encode()
    started = time.monotonic()
    for index, (frame_id, jpeg) in enumerate(frames):
        if fps > 0:
            time.sleep(max(0.0, started + index / fps - time.monotonic()))
        headers = [
            (FrameHeader.CAMERA_ID.value, key),
            (FrameHeader.FRAME_ID.value, frame_id.encode()),
            (FrameHeader.CAPTURED_AT.value, datetime.now(UTC).isoformat(timespec="milliseconds").encode()),
        ]
        _produce_one(producer, outcome, topic, key, jpeg, headers, frame_id)
    unflushed = producer.flush(flush_timeout_s)
    if unflushed:
        outcome.fail(unflushed, f"{unflushed} frames not delivered within {flush_timeout_s:.0f} s")
    return ProduceReport(
        sent=outcome.sent,
        failed=outcome.failed,
        bytes_sent=outcome.bytes_sent,
        seconds=time.monotonic() - started,
        first_error=outcome.first_error,
    )


def _produce_one(
    producer: Producer,
    outcome: _DeliveryTally,
    topic: str,
    key: bytes,
    jpeg: bytes,
    headers: list[tuple[str, bytes]],
    frame_id: str,
) -> None:
    while True:
        try:
            producer.produce(topic, value=jpeg, key=key, headers=headers, on_delivery=outcome.on_delivery)
            break
        except BufferError:
            producer.poll(0.1)  # local queue full: let deliveries drain it
        except KafkaException as exc:  # e.g. the frame is over message.max.bytes
            outcome.fail(1, f"frame {frame_id}: {exc.args[0].str()}")
            break
    producer.poll(0)


class _DeliveryTally:
    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0
        self.bytes_sent = 0
        self.first_error: str | None = None

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.sent += 1
            self.bytes_sent += len(message.value() or b"")
        else:
            self.fail(1, f"delivery of {message.key()!r} to {message.topic()}: {error.str()}")

    def fail(self, count: int, reason: str) -> None:
        log.error("%s", reason)
        self.failed += count
        self.first_error = self.first_error or reason
