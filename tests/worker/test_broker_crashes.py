"""A durable embedded broker killed mid-stream, again and again, under the worker: every frame the
camera's producer had acknowledged gets its event (README, Limitations).

Both the camera and the worker publish with the embedded broker's delivery settings
(`--local-broker`: acks=all retries, no idempotence), which Tansu 0.6 does not lose a batch of when
killed. `STREAM_WORKER_BROKER_KILLS` sets how many kills (CI: 2; a longer check: 6).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess as WorkerProcess
from service_processes import TopicReader

from stream_worker.launchers.broker import LocalBroker, create_topics
from stream_worker.launchers.ports import free_port
from stream_worker.tools.produce import producer_config

KILLS = int(os.environ.get("STREAM_WORKER_BROKER_KILLS", "2"))
PARTITIONS = 2
FPS = 10.0
FRAMES_BETWEEN_KILLS = 25  # acknowledged by the broker between two kills
WAIT_S = 240.0


class Camera(threading.Thread):
    """Publishes numbered frames at a steady rate until stopped; remembers the acknowledged ones."""

    def __init__(self, bootstrap_servers: str, topic: str, jpeg: bytes) -> None:
        super().__init__(daemon=True)
        self.topic, self.jpeg = topic, jpeg
        self.acknowledged: set[str] = set()
        self.errors: list[str] = []
        self.unflushed = -1
        self.stop = threading.Event()
        self._producer = Producer(producer_config(bootstrap_servers, local_broker=True))

    def _on_delivery(self, frame_id: str):
        def delivered(error: object, _message: object) -> None:
            if error is not None:
                self.errors.append(str(error))
            else:
                self.acknowledged.add(frame_id)

        return delivered

    def run(self) -> None:
        started, sent = time.monotonic(), 0
        while not self.stop.is_set():
            time.sleep(max(0.0, started + sent / FPS - time.monotonic()))
            camera = f"cam-{sent % 4}"
            frame_id = f"{camera}/{sent}"
            headers = [("camera_id", camera.encode()), ("frame_id", frame_id.encode())]
            headers.append(("captured_at", str(int(time.time() * 1000)).encode()))
            self._producer.produce(
                self.topic,
                value=self.jpeg,
                key=camera.encode(),
                headers=headers,
                on_delivery=self._on_delivery(frame_id),
            )
            sent += 1
            self._producer.poll(0)
        self.unflushed = self._producer.flush(120)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while len(self.acknowledged) < count:
            assert time.monotonic() < deadline, (
                f"only {len(self.acknowledged)} of {count} frames acknowledged"
            )
            time.sleep(0.2)


@pytest.mark.integration
@pytest.mark.timeout(300 + 60 * KILLS)
def test_every_acknowledged_frame_gets_its_event_across_broker_kills(
    tmp_path: Path, triton_url: str, small_jpeg: bytes
) -> None:
    port, data_dir = free_port(), tmp_path / "broker"
    frames, plates, dlq = "frames", "plates", "frames.dlq"
    broker = LocalBroker(port, data_dir=data_dir).start()
    worker = camera = None
    try:
        create_topics(broker.bootstrap_servers, [frames, plates, dlq], PARTITIONS)
        worker = WorkerProcess(
            ["--bootstrap-servers", broker.bootstrap_servers, "--local-broker", "--triton-url", triton_url,
             "--group-id", "workers", "--input-topic", frames, "--output-topic", plates, "--dlq-topic", dlq,
             "--session-timeout-ms", "6000", "--metrics-port", "0", "--triton-timeout-s", "300"],
            tmp_path / "worker.log",
        ).start()  # fmt: skip
        worker.started_port()  # started
        camera = Camera(broker.bootstrap_servers, frames, small_jpeg)
        camera.start()
        for kill in range(1, KILLS + 1):
            camera.wait_for(kill * FRAMES_BETWEEN_KILLS)
            broker.kill()
            broker = LocalBroker(port, data_dir=data_dir).start()
        camera.wait_for((KILLS + 1) * FRAMES_BETWEEN_KILLS)
        camera.stop.set()
        camera.join(timeout=150)
        assert camera.errors == [] and camera.unflushed == 0

        events = TopicReader(broker.bootstrap_servers, plates, PARTITIONS)
        dead_letters = TopicReader(broker.bootstrap_servers, dlq, PARTITIONS)
        answered: set[str] = set()
        deadline = time.monotonic() + WAIT_S
        while not camera.acknowledged <= answered and time.monotonic() < deadline:
            assert worker.is_running(), f"worker exited with {worker.returncode}:\n{worker.log_tail()}"
            events.poll(0.5)
            dead_letters.poll(0.2)
            answered = {orjson.loads(r.value)["frame_id"] for r in events.records}
            answered |= {
                r.headers["frame_id"].decode() for r in dead_letters.records if "frame_id" in r.headers
            }
        events.close()
        dead_letters.close()
        missing = sorted(camera.acknowledged - answered)
        assert not missing, f"{len(missing)} acknowledged frames without an event: {missing[:10]}"
    finally:
        if camera is not None:
            camera.stop.set()
        if worker is not None and worker.is_running():
            worker.stop()
        broker.stop()
