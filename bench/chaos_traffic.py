"""The broker side of a `bench chaos` run: the cameras' publisher and the independent consumer.

The consumer reads the output and dead-letter topics from the beginning, outside the workers'
group, so that what it records is what a downstream reader would see; parse_output reduces each
record to what the checker (bench/chaos_check.py) needs, and is tested without a broker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.chaos_check import Output
from bench.chaos_plan import Planned, record_parts
from stream_worker.contracts import DeadLetterHeader

MIB = 2**20


class Publisher(threading.Thread):
    """Publishes the plan in order at `fps` (0: as fast as the broker takes it), each camera to its
    partition; records where the broker stored each frame."""

    def __init__(
        self, bootstrap: str, topic: str, plan: Sequence[Planned], partitions: int, fps: float
    ) -> None:
        super().__init__(name="chaos-publisher", daemon=True)
        self.sources: dict[int, tuple[int, int]] = {}
        self.errors: list[str] = []
        self.published = 0
        self.finished = threading.Event()
        self._servers, self._topic, self._plan = bootstrap, topic, plan
        self._partitions, self._fps = partitions, fps
        self._stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        from stream_worker.tools.produce import producer_config

        extra = {"message.max.bytes": str(8 * MIB)}
        producer = Producer(
            producer_config(self._servers, extra, local_broker=True)
        )  # chaos: the local broker
        started = time.monotonic()
        try:
            for position, frame in enumerate(self._plan):
                if self._stopping.is_set():
                    return
                if self._fps > 0:
                    self._stopping.wait(max(0.0, started + position / self._fps - time.monotonic()))
                key, headers = record_parts(frame)
                while True:
                    try:
                        producer.produce(
                            self._topic,
                            value=frame.record.value,
                            key=key,
                            headers=headers,
                            partition=frame.camera % self._partitions,
                            on_delivery=self._delivered(frame.index),
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                self.published += 1
                producer.poll(0)
            if left := producer.flush(60):
                self.errors.append(f"{left} frames not acknowledged within 60 s")
        finally:
            self.finished.set()

    def _delivered(self, index: int) -> Callable[[Any, Any], None]:
        def callback(error: Any, message: Any) -> None:
            if error is not None:
                self.errors.append(f"frame {index}: {error}")
            else:
                self.sources[index] = (message.partition(), message.offset())

        return callback

    def stop(self) -> None:
        self._stopping.set()
        self.join(90)


def parse_output(topic: str, plates_topic: str, value: bytes | None, headers: list, arrived: float) -> Output:
    """An output record as the checker sees it; a record that does not say its source gets None."""
    import orjson

    if topic == plates_topic:
        try:
            event = orjson.loads(value or b"")
            source = (int(event["source"]["partition"]), int(event["source"]["offset"]))
        except (ValueError, KeyError, TypeError):
            return Output(arrived, False, None)
        return Output(
            arrived,
            False,
            source,
            event_id=event.get("event_id"),
            camera_id=event.get("camera_id"),
            frame_id=event.get("frame_id"),
            plates=len(event.get("plates") or []),
        )
    named = {name: (raw or b"").decode("utf-8", "replace") for name, raw in headers or []}
    try:
        source = (int(named[DeadLetterHeader.SOURCE_PARTITION]), int(named[DeadLetterHeader.SOURCE_OFFSET]))
    except (KeyError, ValueError):
        source = None
    return Output(
        arrived,
        True,
        source,
        reason=named.get(DeadLetterHeader.REASON),
        stage=named.get(DeadLetterHeader.STAGE),
        detail=named.get(DeadLetterHeader.DETAIL),
    )


class Collector:
    """The independent consumer: reads the output and dead-letter topics from the beginning, with
    no group offsets, and keeps what the checker needs of each record."""

    def __init__(self, bootstrap: str, plates_topic: str, dlq_topic: str) -> None:
        from bench.side_reader import SideReader

        self.outputs: list[Output] = []
        self.sources: set[tuple[int, int]] = set()
        self.triton_answers: list[float] = []  # arrivals of events and of Triton's dead letters
        self.event_arrivals: list[float] = []
        self._plates = plates_topic
        self._reader = SideReader(bootstrap, [plates_topic, dlq_topic], self._keep, name="chaos-collector")

    def begin(self) -> Collector:
        self._reader.start()
        return self

    def _keep(self, message: Any, arrived: float) -> None:
        headers = message.headers() or []
        output = parse_output(message.topic(), self._plates, message.value(), headers, arrived)
        self.outputs.append(output)
        if output.source is not None:
            self.sources.add(output.source)
        if not output.dead_letter or output.stage != "validate":
            self.triton_answers.append(arrived)
        if not output.dead_letter:
            self.event_arrivals.append(arrived)

    def stop(self) -> None:
        self._reader.stop()
