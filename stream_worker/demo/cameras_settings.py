"""The cameras' settings the demo writes before the worker starts, so that the run shows them at
work: a zone over the street, where the sample van's plate is, and plate pictures on.

Every simulated camera cycles through the same inputs (the sample van among them), so each gets
the same settings. They go to the compacted camera-settings topic the worker reads to its end
before its first frame: the first events already carry each plate's `zone` and `image`.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaException

from stream_worker.cameras.records import encode_settings
from stream_worker.contracts.cameras import CameraSettings, Zone
from stream_worker.demo.options import DemoError
from stream_worker.service.compacted import CompactedTopicError, write_compacted

# The lower 40 % of the frame: the road and the kerb. In samples/car.jpg (780x439) the van's plate
# box is about x 95-132, y 330-343, its centre at (0.15, 0.77) normalised: inside.
STREET_ZONE = Zone(name="street", polygon=((0.0, 0.6), (1.0, 0.6), (1.0, 1.0), (0.0, 1.0)))


def demo_settings(camera_id: str) -> CameraSettings:
    """What each demo camera is set to: the street zone and plate pictures."""
    return CameraSettings(display_name=f"demo {camera_id}", zones=(STREET_ZONE,), plate_images=True)


def describe(camera_ids: Sequence[str]) -> str:
    """For the demo's progress line: which cameras get which settings."""
    cameras = camera_ids[0] if len(camera_ids) == 1 else f"{camera_ids[0]}..{camera_ids[-1]}"
    return f"setting up {cameras}: zone {STREET_ZONE.name!r} (lower 40% of the frame), plate pictures on"


def write_demo_settings(bootstrap: str, topic: str, camera_ids: Sequence[str]) -> None:
    """Store every camera's settings (one producer for all, as `cameras set` stores one);
    DemoError when the broker refuses."""
    records = [encode_settings(camera_id, demo_settings(camera_id)) for camera_id in camera_ids]
    try:
        write_compacted(bootstrap, topic, records)
    except (CompactedTopicError, KafkaException) as error:
        raise DemoError(f"cannot write the camera settings to {topic}: {error}") from error
