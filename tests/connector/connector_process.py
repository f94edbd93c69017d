"""The connector as the integration tests run it: its own process (`python -m stream_worker connect`,
as production runs it), its JSON log in a file, its metrics page scraped; the topics of a test,
readers of the frames and status topics, and the waits (the fixtures are in conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import av
import numpy as np
from service_processes import ServiceProcess, TopicReader
from stream_servers import videos_dir

from stream_worker.cameras.status import CameraStatus, decode_status
from stream_worker.cameras.store import write_settings
from stream_worker.contracts.cameras import CameraSettings, CameraSource
from stream_worker.service.compacted import read_compacted

WAIT_S = 60.0
VIDEOS = videos_dir()
DASHCAM = VIDEOS / "dashcam-rain-T404YA47.mp4"  # 800x416, 30 fps, 1.57 s
GATE = VIDEOS / "gate-truck-Y663YO750.mp4"  # 848x624, 4 fps, 5.75 s
FRAME_PARTITIONS = 3
CAMERA_PARTITIONS = 4


class Connector(ServiceProcess):
    def __init__(self, args: list[str], log_path: Path) -> None:
        super().__init__(args, log_path, command="connect", started="connector started")

    def cameras(self) -> set[str]:
        """The cameras whose metrics this replica exports (the cameras it reads)."""
        found = set()
        for line in self.scrape()[1].splitlines():
            if line.startswith('stream_worker_connector_camera_connected{camera="'):
                found.add(line.split('"')[1])
        return found


@dataclass
class Topics:
    frames: str
    cameras: str
    status: str
    group: str


def read_statuses(bootstrap: str, topic: str) -> dict[str, CameraStatus]:
    return dict(read_compacted(bootstrap, topic, decode_status, timeout_s=30).values)


def set_source(bootstrap: str, topics: Topics, camera_id: str, url: str, **source: object) -> None:
    write_settings(
        bootstrap, camera_id, CameraSettings(source=CameraSource(url=url, **source)), topics.cameras
    )


def of_camera(reader: TopicReader, camera_id: str) -> list:
    return [r for r in reader.records if r.key == camera_id.encode()]


def captured(record) -> float:
    return datetime.fromisoformat(record.headers["captured_at"].decode()).timestamp()


def session_of(record) -> str:
    return record.headers["frame_id"].decode().split(":")[1]


def wait_until(
    condition: Callable[[], object], what: str, connectors: list[Connector], timeout_s: float = WAIT_S
) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        for connector in connectors:
            assert connector.is_running(), (
                f"the connector exited with {connector.returncode}:\n{connector.log_tail()}"
            )
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n" + "\n".join(
            c.log_tail() for c in connectors
        )
        time.sleep(0.3)


def wait_for_frames(
    reader: TopicReader, camera_id: str, count: int, connectors: list[Connector], timeout_s: float = WAIT_S
) -> list:
    def enough() -> bool:
        reader.poll(0.3)
        return len(of_camera(reader, camera_id)) >= count

    wait_until(enough, f"{count} frames of {camera_id}", connectors, timeout_s)
    return of_camera(reader, camera_id)


def still_then_moving(
    path: Path,
    seconds_still: float,
    seconds_moving: float,
    fps: int = 10,
    key_frame_every: int = 12,
    far_s: float = 0.0,
) -> None:
    """A grey scene, a block crossing it for `seconds_moving`, the grey scene again; `far_s`: for
    that long before the crossing, a speck creeping far away (6x6 px, 2 px a frame: under any motion
    threshold), as a vehicle still too far to count as motion."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        stream.codec_context.gop_size = key_frame_every
        total = int((2 * seconds_still + seconds_moving) * fps)
        for index in range(total):
            image = np.full((240, 320, 3), 100, dtype=np.uint8)
            moving = seconds_still * fps <= index < (seconds_still + seconds_moving) * fps
            if moving:
                x = 20 + (index - int(seconds_still * fps)) * 12
                image[80:160, x : x + 60] = 230
            elif (seconds_still - far_s) * fps <= index < seconds_still * fps:
                x = 300 - 2 * (index - round((seconds_still - far_s) * fps))
                image[20:26, x : x + 6] = 230
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
