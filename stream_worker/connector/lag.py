"""How far the workers are behind on each partition of `frames`, in seconds, from what the broker
says of the worker group (its committed position and the partition's end, read each second by
`GroupPositions`) and the capture times of this connector's own frames.

- `wait_s`: the wait of a frame published now, the frames ahead of it over the workers' pace on
  the partition (positions read over the last `window_s`); with no pace yet (the first seconds, a
  stopped worker) the age of the oldest frame not read. This is what shedding acts on.
- `age_s`: the age of this connector's oldest frame the workers have not committed: the delay
  the frames being read now have had. This is what the status shows.
- Unknown (None) while the group has committed nothing on the partition: no worker has read it
  yet, so there is no pace to keep up with (and a misnamed group never sheds a camera).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("stream_worker.connector")

WINDOW_S = 5.0
MAX_FRAMES_KEPT = 100_000  # per partition: the capture times of frames not read yet


@dataclass(frozen=True)
class Position:
    committed: int | None  # the group's next offset to read; None: nothing committed
    end: int  # the partition's end offset


class FramesBacklog:
    """Per partition: positions over time and this connector's frames waiting (see the module).
    Only the connector's main thread calls it."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._positions: dict[int, deque[tuple[float, Position]]] = {}
        self._frames: dict[int, deque[tuple[int, float]]] = {}  # (offset, capture epoch s)

    def delivered(self, partition: int, offset: int, captured_at: float) -> None:
        frames = self._frames.setdefault(partition, deque(maxlen=MAX_FRAMES_KEPT))
        if frames and offset <= frames[-1][0]:
            return  # the broker gives increasing offsets; anything else is not ours to judge
        frames.append((offset, captured_at))

    def observe(self, positions: Mapping[int, Position], now: float) -> None:
        """The positions read at monotonic time `now`."""
        for partition, position in positions.items():
            history = self._positions.setdefault(partition, deque())
            history.append((now, position))
            while len(history) > 2 and now - history[1][0] >= self.window_s:
                history.popleft()
            if position.committed is not None:
                frames = self._frames.get(partition)
                while frames and frames[0][0] < position.committed:
                    frames.popleft()

    def age_s(self, partition: int, now_epoch: float) -> float | None:
        history = self._positions.get(partition)
        if not history or history[-1][1].committed is None:
            return None
        frames = self._frames.get(partition)
        return max(0.0, now_epoch - frames[0][1]) if frames else 0.0

    def wait_s(self, partition: int, now_epoch: float) -> float | None:
        history = self._positions.get(partition)
        if not history:
            return None
        (then, first), (now, last) = history[0], history[-1]
        if last.committed is None:
            return None
        backlog = max(0, last.end - last.committed)
        if backlog == 0:
            return 0.0
        if first.committed is not None and now - then >= self.window_s / 2:
            pace = (last.committed - first.committed) / (now - then)
            if pace > 0:
                return backlog / pace
        return self.age_s(partition, now_epoch)


class GroupPositions:
    """A thread that reads the worker group's committed positions and the partitions' ends of the
    frames topic every `every_s`; `latest` is the last answer (empty until one comes). It never
    joins the group: it only asks (OffsetFetch, ListOffsets)."""

    def __init__(self, config: Mapping[str, Any], group_id: str, topic: str, every_s: float = 1.0) -> None:
        self._config = {**config, "group.id": group_id, "enable.auto.commit": False}
        self._config.pop("statistics.interval.ms", None)  # nobody reads them here
        self.topic = topic
        self.every_s = every_s
        self.latest: dict[int, Position] = {}
        self.read_at = 0.0  # monotonic time of `latest`
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="group-positions", daemon=True)

    def start(self) -> GroupPositions:
        self._thread.start()
        return self

    def close(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        import time

        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(self._config)
        failing = False
        try:
            while not self._stop.is_set():
                try:
                    topic = consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
                    partitions = sorted(topic.partitions) if topic is not None and not topic.error else []
                    wanted = [TopicPartition(self.topic, p) for p in partitions]
                    committed = consumer.committed(wanted, timeout=5) if wanted else []
                    latest = {}
                    for tp in committed:
                        _, end = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
                        latest[tp.partition] = Position(tp.offset if tp.offset >= 0 else None, end)
                    self.latest, self.read_at = latest, time.monotonic()
                    failing = False
                except KafkaException as error:
                    if not failing:
                        log.warning("the workers' position could not be read", extra={"error": str(error)})
                    failing = True
                consumer.poll(0)  # its log and error callbacks; it never subscribes, so never joins
                self._stop.wait(self.every_s)
        finally:
            consumer.close()
