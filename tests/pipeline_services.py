"""The recognition pipeline as its own processes, for the end-to-end tests (a pytest plugin:
conftest.py lists it in `pytest_plugins`; importable: pytest's pythonpath has tests/).

- `pipeline_topics`: fresh frames, plates, dlq, sightings and alerts topics (and a watch-list name).
- `start_service`: starts `stream-worker COMMAND` with the broker, the group `<test>-COMMAND` (the
  same on a restart), a free metrics port and a log of its own; every one still running is
  SIGKILLed at the test's end.
- `start_pipeline`: `run` on the real Triton, `sightings` and `alerts` over those topics.
- `Frame` and `produce_frames`: frames as a camera gateway publishes them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer
from service_processes import ServiceProcess, TopicReader

from stream_worker.contracts import PlateAlert
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.launchers.broker import create_topics

PARTITIONS = 3
CAMERA_PARTITION = {"gate-1": 0, "gate-2": 1}
MISREAD = "B840OK197"  # how the worker reads the van in samples/car.jpg: O for C, distance 0.5
ADDED = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Topics:
    frames: str
    plates: str
    dlq: str
    sightings: str
    alerts: str
    watchlist: str


@dataclass
class Frame:
    camera: str
    frame_id: str
    captured_ms: int
    value: bytes


def entry(plate_text: str, list_name: str = "stolen") -> WatchEntry:
    return WatchEntry(plate=plate_text, list=list_name, added_at=ADDED)


def alerts(reader: TopicReader) -> list[PlateAlert]:
    return [PlateAlert.model_validate_json(record.value) for record in reader.records]


@pytest.fixture
def pipeline_topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(
        *(f"{unique_name}-{kind}" for kind in ("frames", "plates", "dlq", "sightings", "alerts", "watchlist"))
    )
    create_topics(
        kafka_bootstrap, [names.frames, names.plates, names.dlq, names.sightings, names.alerts], PARTITIONS
    )
    return names


@pytest.fixture
def start_service(tmp_path: Path, kafka_bootstrap: str, unique_name: str):
    started: list[ServiceProcess] = []

    def start(command: str, started_line: str, *args: str) -> ServiceProcess:
        common = [
            "--bootstrap-servers", kafka_bootstrap,
            "--group-id", f"{unique_name}-{command}",
            "--session-timeout-ms", "6000",
            "--metrics-port", "0",
        ]  # fmt: skip
        log = tmp_path / f"{command}-{sum(s.command == command for s in started)}.log"  # one per start
        service = ServiceProcess([*common, *args], log, command=command, started=started_line).start()
        started.append(service)
        return service

    yield start
    for service in started:
        if service.is_running():
            service.stop(signal.SIGKILL)


def start_pipeline(
    start: Callable[..., ServiceProcess],
    triton_url: str,
    topics: Topics,
    silence_s: float,
    pass_gap_s: float,
    cameras_topic: str | None = None,
) -> list[ServiceProcess]:
    """The worker, sightings and alerts services (in that order), started; each sightings pass
    closes after `silence_s` (wall clock), each alerts pass after `pass_gap_s`."""
    cameras = ["--cameras-topic", cameras_topic] if cameras_topic else []
    worker = start(
        "run", "worker started",
        "--triton-url", triton_url,
        "--input-topic", topics.frames,
        "--output-topic", topics.plates,
        "--dlq-topic", topics.dlq,
        *cameras,
        "--triton-timeout-s", "300",  # the CPU Triton serves one request at a time
        "--retry-max-backoff-s", "1",
    )  # fmt: skip
    sightings = start(
        "sightings", "sightings started",
        "--input-topic", topics.plates,
        "--output-topic", topics.sightings,
        *cameras,
        "--silence-s", str(silence_s),
    )  # fmt: skip
    alerts_service = start(
        "alerts", "alerts started",
        "--input-topic", topics.plates,
        "--output-topic", topics.alerts,
        "--watchlist-topic", topics.watchlist,
        "--sightings-topic", topics.sightings,
        "--pass-gap-s", str(pass_gap_s),
    )  # fmt: skip
    return [worker, sightings, alerts_service]


def produce_frames(bootstrap: str, topic: str, frames: list[Frame]) -> None:
    """Frames as a camera gateway publishes them: key and headers per the frame headers contract."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for frame in frames:
        headers = [
            ("camera_id", frame.camera.encode()),
            ("frame_id", frame.frame_id.encode()),
            ("captured_at", str(frame.captured_ms).encode()),
        ]
        producer.produce(
            topic,
            value=frame.value,
            key=frame.camera.encode(),
            partition=CAMERA_PARTITION[frame.camera],
            headers=headers,
        )
        producer.poll(0)
    assert producer.flush(60) == 0
