"""A live camera offering more frames than its workers read: the connector sheds frames so that the
frames read stay fresher than the camera's max_delay_s, and counts them.

The real RTSP server, the real broker and the connector as a process; in the workers' place a
consumer of the workers' group that reads and commits 2 frames a second, a known pace below the
camera's 10 fps (the CPU Triton's pace on shared cores varies too much to check a bound by). With
max_delay_s 0 (never shed) the same frames wait longer and longer: what the bound is checked
against.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest
from confluent_kafka import Consumer, TopicPartition
from connector_process import DASHCAM, read_statuses, set_source

from stream_worker.launchers.rtsp import Mount

pytestmark = pytest.mark.integration

PACE_FPS = 2.0  # what the slow reader reads
CAMERA_FPS = 10.0
BOUND_S = 4.0
RUN_S = 45.0
SETTLED_S = 25.0  # the first overshoot (before the workers' pace is known) drained by then


class SlowReader:
    """Reads and commits PACE_FPS frames a second in the workers' group, in a thread; `read`:
    (seconds since the start, age) of each frame with its image. It commits the topic's end first,
    as workers already running would have."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
            }
        )
        partitions = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = [TopicPartition(topic, p, self.consumer.get_watermark_offsets(TopicPartition(topic, p))[1])
                for p in partitions]  # fmt: skip
        self.consumer.commit(offsets=ends, asynchronous=False)
        self.read: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.consumer.subscribe([self.topic])
        start = time.monotonic()
        while not self._stop.is_set():
            message = self.consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            if message.value():  # a frame with its image (markers cost a worker nothing)
                captured_at = dict(message.headers() or ())["captured_at"].decode()
                age = time.time() - datetime.fromisoformat(captured_at).timestamp()
                self.read.append((time.monotonic() - start, age))
                time.sleep(1 / PACE_FPS)
            self.consumer.commit(
                offsets=[TopicPartition(self.topic, message.partition(), message.offset() + 1)],
                asynchronous=False,
            )

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


@pytest.mark.parametrize("shedding", [True, False], ids=["max_delay_s=4", "never-shed"])
def test_a_camera_faster_than_its_workers_stays_under_its_bound_and_counts_what_it_sheds(
    kafka_bootstrap, topics, start_connector, rtsp_servers, shedding
):
    server = rtsp_servers([Mount("dash", DASHCAM)])
    workers = f"{topics.group}-workers"
    reader = SlowReader(kafka_bootstrap, topics.frames, workers)
    set_source(
        kafka_bootstrap,
        topics,
        "live",
        f"rtsp://{server.host}:{server.port}/dash",
        fps=CAMERA_FPS,
        max_delay_s=BOUND_S if shedding else 0.0,
    )
    try:
        start_connector("--worker-group-id", workers)
        time.sleep(RUN_S)
    finally:
        reader.close()
    read = reader.read
    status = read_statuses(kafka_bootstrap, topics.status)["live"]

    settled = [age for at, age in read if at >= SETTLED_S]
    assert len(settled) >= (RUN_S - SETTLED_S) * PACE_FPS * 0.7
    print(f"shedding={shedding}: frames read {len(read)}, age after {SETTLED_S:g} s max "
          f"{max(settled):.2f} s, last {settled[-1]:.2f} s; status {status}")  # fmt: skip
    if shedding:
        assert max(settled) < BOUND_S
        assert status.frames_shed > status.frames_offered * 0.5
        assert status.published_fps < status.offered_fps
        assert status.delay_s is not None and status.delay_s < BOUND_S
        assert status.max_delay_s == BOUND_S
    else:
        assert settled[-1] > 2 * BOUND_S  # without shedding the wait only grows
        assert status.frames_shed == 0
