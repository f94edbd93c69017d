"""`stream-worker cameras status` reads the status records of the last 20 s (`--since`), found
from the records' timestamps, so a long history does not slow it; `--since 0` reads them all."""

from __future__ import annotations

import subprocess
import sys
import time

import orjson
import pytest
from confluent_kafka import Producer

from stream_worker.cameras.status import CameraStatus
from stream_worker.service.compacted import ensure_compacted_topic

pytestmark = pytest.mark.integration


def record(camera_id: str, updated_at: float) -> bytes:
    return CameraStatus(
        camera_id=camera_id, state="streaming", state_since=updated_at - 60, last_error=None, source="rtsp://c/1",
        replica="r1", updated_at=updated_at, decoded_fps=5.0, published_fps=5.0, frames_decoded=1,
        frames_published=1, frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=0,
        motion_share=None, last_frame_at=updated_at,
    ).to_json()  # fmt: skip


def status_json(bootstrap: str, topic: str, *args: str) -> dict[str, dict]:
    out = subprocess.run(
        [sys.executable, "-m", "stream_worker", "cameras", "status", "--json",
         "--bootstrap-servers", bootstrap, "--topic", topic, *args],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    return {line["camera_id"]: line for line in map(orjson.loads, out.splitlines())}


def test_status_reads_the_recent_records_unless_told_otherwise(
    kafka_bootstrap: str, unique_name: str
) -> None:
    ensure_compacted_topic(kafka_bootstrap, unique_name)
    now = time.time()
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    for index in range(3000):  # an hour ago: the gone camera's last record among the others'
        at = now - 3600 + index * 0.5
        camera = "gone" if index == 2999 else f"cam-{index % 3}"
        producer.produce(unique_name, key=camera.encode(), value=record(camera, at), timestamp=int(at * 1000))
    for camera in ("cam-0", "cam-1", "cam-2"):
        producer.produce(
            unique_name, key=camera.encode(), value=record(camera, now), timestamp=int(now * 1000)
        )
    assert producer.flush(30) == 0
    recent = status_json(kafka_bootstrap, unique_name)
    assert set(recent) == {"cam-0", "cam-1", "cam-2"} and all(not s["stale"] for s in recent.values())
    everything = status_json(kafka_bootstrap, unique_name, "--since", "0")
    assert set(everything) == {"cam-0", "cam-1", "cam-2", "gone"} and everything["gone"]["stale"]
