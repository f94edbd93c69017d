"""The clips of ../shared/videos read by the connector through the whole stack: the connector, the
real broker, the worker on the real Triton and the sightings service, each its own process.

Each clip's labelled plate comes out as an exact sighting, and no published sighting has a text
that is not a plate of the format: over RTSP (GStreamer's RTSP server looping every clip), from
files, and over HTTP MJPEG (launchers/mjpeg.py serving the clip's frames). Motion gating is on, as a
camera would run it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from connector_process import Connector
from service_processes import ServiceProcess, TopicReader
from stream_servers import clip_plate

from stream_worker.cameras.store import write_settings
from stream_worker.contracts import PLATE_FORMAT
from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
from stream_worker.launchers.broker import create_topics
from stream_worker.service.compacted import ensure_compacted_topic

pytestmark = pytest.mark.integration

PARTITIONS = 3
WAIT_S = 300.0  # the CPU Triton on two shared cores


def camera_of(clip: Path) -> str:
    return f"cam-{clip_plate(clip).lower()}"


@pytest.fixture
def stack(
    tmp_path: Path, kafka_bootstrap: str, triton_url: str, unique_name: str
) -> Iterator[dict[str, str]]:
    """Topics, then the worker, the sightings service and the connector on them."""
    topics = {name: f"{unique_name}-{name}" for name in ("frames", "plates", "dlq", "sightings")}
    topics |= {"cameras": f"{unique_name}-cameras", "status": f"{unique_name}-status"}
    create_topics(kafka_bootstrap, [topics[n] for n in ("frames", "plates", "dlq", "sightings")], PARTITIONS)
    ensure_compacted_topic(kafka_bootstrap, topics["cameras"], partitions=PARTITIONS)
    common = ["--bootstrap-servers", kafka_bootstrap, "--metrics-port", "0", "--session-timeout-ms", "6000"]
    services = [
        ServiceProcess(
            [*common, "--triton-url", triton_url, "--group-id", f"{unique_name}-worker",
             "--input-topic", topics["frames"], "--output-topic", topics["plates"],
             "--dlq-topic", topics["dlq"], "--cameras-topic", topics["cameras"], "--triton-timeout-s", "600"],
            tmp_path / "worker.log",
        ),
        ServiceProcess(
            [*common, "--group-id", f"{unique_name}-sightings", "--input-topic", topics["plates"],
             "--output-topic", topics["sightings"], "--cameras-topic", topics["cameras"], "--silence-s", "5"],
            tmp_path / "sightings.log",
            command="sightings",
            started="sightings started",
        ),
        Connector(
            [*common, "--group-id", f"{unique_name}-connector", "--frames-topic", topics["frames"],
             "--cameras-topic", topics["cameras"], "--status-topic", topics["status"]],
            tmp_path / "connector.log",
        ),
    ]  # fmt: skip
    for service in services:
        service.start()
    try:
        for service in services:
            service.started_port()
        yield topics
    finally:
        for service in services:
            service.stop()


def _sightings_of_every_clip(
    kafka_bootstrap: str, topics: dict[str, str], video_clips: list[Path], url_of: Callable[[Path], str]
) -> None:
    for clip in video_clips:
        source = CameraSource(url=url_of(clip), fps=10, loop=True)
        settings = CameraSettings(source=source, motion=MotionSettings())
        write_settings(kafka_bootstrap, camera_of(clip), settings, topics["cameras"])
    wanted = {camera_of(clip): clip_plate(clip) for clip in video_clips}
    reader = TopicReader(kafka_bootstrap, topics["sightings"], PARTITIONS)
    deadline = time.monotonic() + WAIT_S
    try:
        while True:
            reader.poll(1.0)
            sightings = [orjson.loads(record.value) for record in reader.records]
            exact = {s["camera_id"] for s in sightings if wanted.get(s["camera_id"]) == s["text"]}
            if exact >= set(wanted):
                break
            assert time.monotonic() < deadline, (
                f"no exact sighting yet for {set(wanted) - exact}: "
                f"{sorted({(s['camera_id'], s['text']) for s in sightings})}"
            )
    finally:
        reader.close()
    not_plates = [
        s["text"] for s in sightings if not re.match(PLATE_FORMAT, s["text"]) or not s["format_valid"]
    ]
    assert not not_plates, f"sightings whose text is not a plate: {not_plates}"


def test_every_clip_over_rtsp_is_an_exact_sighting_and_nothing_else_is_published(
    kafka_bootstrap: str, stack: dict[str, str], rtsp_server, video_clips: list[Path]
) -> None:
    _sightings_of_every_clip(kafka_bootstrap, stack, video_clips, lambda clip: rtsp_server.url(clip.stem))


def test_every_clip_from_a_file_is_an_exact_sighting(
    kafka_bootstrap: str, stack: dict[str, str], video_clips: list[Path]
) -> None:
    _sightings_of_every_clip(kafka_bootstrap, stack, video_clips, str)


def test_every_clip_over_http_mjpeg_is_an_exact_sighting(
    kafka_bootstrap: str, stack: dict[str, str], mjpeg_server, video_clips: list[Path]
) -> None:
    _sightings_of_every_clip(kafka_bootstrap, stack, video_clips, lambda clip: mjpeg_server.url(clip.stem))
