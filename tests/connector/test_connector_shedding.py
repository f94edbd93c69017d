"""A live camera offering more frames than its workers read: the connector sheds frames so that the
frames read stay fresher than the camera's max_delay_s, and counts them.

The real RTSP server, the real broker and the connector as a process; in the workers' place either
a consumer of the workers' group that reads and commits 2 frames a second (a known pace, below the
camera's 10 fps, that a tight bound can be checked against), or the real worker on the CPU Triton
(its pace on two shared cores varies). With max_delay_s 0 (never shed) the same frames wait longer
and longer: what the bound is checked against.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition
from connector_process import DASHCAM, read_statuses, set_source
from service_processes import ServiceProcess

from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.rtsp import Mount

pytestmark = pytest.mark.integration

PACE_FPS = 2.0  # what the slow reader reads
CAMERA_FPS = 10.0
BOUND_S = 4.0
# (run, settled) seconds. Shedding: the first overshoot (before the workers' pace is known) is
# drained by the settled time. Never shedding: the wait grows by 0.8 s a second from the connector's
# start (10 frames offered, 2 read), past twice the bound well within the run.
SHEDDING_RUN_S = (50.0, 30.0)
NEVER_SHED_RUN_S = (30.0, 15.0)


def commit_ends(consumer: Consumer, topic: str) -> None:
    """Commit the topic's ends for the consumer's group: workers that have run before."""
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    ends = [TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p))[1])
            for p in partitions]  # fmt: skip
    consumer.commit(offsets=ends, asynchronous=False)


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
        commit_ends(self.consumer, topic)
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


@pytest.mark.parametrize(
    ("shedding", "run_s", "settled_s"),
    [(True, *SHEDDING_RUN_S), (False, *NEVER_SHED_RUN_S)],
    ids=["max_delay_s=4", "never-shed"],
)
def test_a_camera_faster_than_its_workers_stays_under_its_bound_and_counts_what_it_sheds(
    kafka_bootstrap, topics, start_connector, rtsp_servers, shedding, run_s, settled_s
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
        time.sleep(run_s)
    finally:
        reader.close()
    read = reader.read
    status = read_statuses(kafka_bootstrap, topics.status)["live"]

    settled = [age for at, age in read if at >= settled_s]
    assert len(settled) >= (run_s - settled_s) * PACE_FPS * 0.7
    print(f"shedding={shedding}: frames read {len(read)}, age after {settled_s:g} s max "
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


WORKER_RUN_S = 90.0
WORKER_SETTLED_S = 60.0  # the first overshoot (Triton's first requests, the pace not known): 45-60 s
WORKER_BOUND_S = 5.0


def event_delays(bootstrap: str, topic: str, seconds: float) -> list[tuple[float, float]]:
    """(seconds since the start, capture-to-event delay) of each plate event published meanwhile."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    start = time.monotonic()
    delays: list[tuple[float, float]] = []
    try:
        while time.monotonic() - start < seconds:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            event = orjson.loads(message.value())
            if event.get("captured_at"):
                published_s = message.timestamp()[1] / 1000
                captured_s = datetime.fromisoformat(event["captured_at"].replace("Z", "+00:00")).timestamp()
                delays.append((time.monotonic() - start, published_s - captured_s))
    finally:
        consumer.close()
    return delays


def test_a_camera_faster_than_the_worker_on_triton_gets_its_plates_read_fresh(
    kafka_bootstrap, triton_url, topics, start_connector, rtsp_servers, tmp_path
):
    """The real worker on the CPU Triton, which reads fewer than the 25 frames a second of an
    ungated camera on two shared cores: after the first 60 s, half the events come within the bound
    of their frame's capture and none past twice it, and frames were shed (the worker was the
    slower: without shedding the delay grows by about 9 s every 15 s, as docs/cameras.md measured,
    so both fail within the 90 s). The connector halves the rate once a second when the wait passes
    half the bound, so a moment when the shared cores stall the worker holds batches past it for a
    while: 5.5 s seen once at load 5.5, and 9 events in 10 within 5.37 s at load 6.0 (a 6.3 s spike
    in the last 15 s, back to -0.7 s at the end), with the suite's other process beside it."""
    plates, dlq = f"{topics.frames}-plates", f"{topics.frames}-dlq"
    create_topics(kafka_bootstrap, [plates, dlq], 3)
    workers = f"{topics.group}-workers"
    group = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": workers})
    commit_ends(group, topics.frames)  # a group that has run before: shedding knows its position
    group.close()
    worker = ServiceProcess(
        ["--bootstrap-servers", kafka_bootstrap, "--metrics-port", "0", "--triton-url", triton_url,
         "--group-id", workers, "--input-topic", topics.frames, "--output-topic", plates, "--dlq-topic", dlq,
         "--cameras-topic", topics.cameras, "--triton-timeout-s", "600"],
        tmp_path / "worker.log",
    )  # fmt: skip
    worker.start()
    try:
        worker.started_port()
        server = rtsp_servers([Mount("dash", DASHCAM)])
        set_source(kafka_bootstrap, topics, "dash", f"rtsp://{server.host}:{server.port}/dash", fps=25,
                   max_delay_s=WORKER_BOUND_S)  # fmt: skip
        started = time.process_time()
        start_connector("--worker-group-id", workers)
        delays = event_delays(kafka_bootstrap, plates, WORKER_RUN_S)
        lag = worker.metric("stream_worker_lag_seconds")
    finally:
        worker.stop()
    status = read_statuses(kafka_bootstrap, topics.status)["dash"]
    settled = [delay for at, delay in delays if at >= WORKER_SETTLED_S]
    by_15_s = [
        max((d for at, d in delays if start <= at < start + 15), default=0.0)
        for start in range(0, int(WORKER_RUN_S), 15)
    ]
    print("max delay per 15 s:", " ".join(f"{d:.1f}" for d in by_15_s))
    ranked = sorted(settled)
    print(f"\n{len(delays)} events, {len(settled)} after {WORKER_SETTLED_S:g} s: delay "
          f"max {ranked[-1]:.2f} s, median {ranked[len(ranked) // 2]:.2f} s, 9 in 10 within "
          f"{ranked[len(ranked) * 9 // 10]:.2f} s, last {settled[-1]:.2f} s; worker lag {lag:.1f} s; "
          f"published {status.frames_published} of {status.frames_offered} offered, "
          f"{status.frames_shed} shed; test CPU {time.process_time() - started:.1f} s; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    assert len(settled) >= 10
    assert ranked[len(ranked) // 2] < WORKER_BOUND_S
    assert ranked[-1] < 2 * WORKER_BOUND_S
    assert status.frames_shed > 0
