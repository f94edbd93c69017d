"""The cameras' settings on their compacted topic: key = the camera id, value = its
`CameraSettings`, tombstone = back to the defaults. `CAMERAS` declares the topic (`STATUSES` the connectors'
camera-status) for
service/compacted.py, which reads, writes and follows it; this adds the two writes by camera."""

from __future__ import annotations

from collections.abc import Mapping

from stream_worker.cameras import status
from stream_worker.cameras.records import decode_record, encode_removal, encode_settings
from stream_worker.contracts import topics
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.service.compacted import (
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopic,
    CompactedTopicError,
)

DEFAULT_TOPIC = topics.CAMERAS.name
# The camera connector's replicas share the cameras by the topic's partitions (a consumer group over
# it): a topic created here gets as many as the connector and the deployments create it with.
DEFAULT_PARTITIONS = topics.CAMERAS.partitions
CAMERAS = CompactedTopic(DEFAULT_TOPIC, decode_record, DEFAULT_PARTITIONS)
# Each connector's report of its cameras, renewed every few seconds: read by a window (`since_s`).
STATUSES = CompactedTopic(status.DEFAULT_TOPIC, status.decode_status)

CamerasSnapshot = CompactedSnapshot[str, CameraSettings]
CamerasStoreError = CompactedTopicError
read_cameras = CAMERAS.read  # every camera's settings, read to the topic's end; a missing topic has none

__all__ = [
    "CAMERAS",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TOPIC",
    "STATUSES",
    "CamerasSnapshot",
    "CamerasStoreError",
    "read_cameras",
    "remove_settings",
    "write_settings",
]


def write_settings(
    bootstrap_servers: str,
    camera_id: str,
    settings: CameraSettings,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Store the camera's settings (creating the compacted topic if needed); returns once stored."""
    CAMERAS.write(bootstrap_servers, [encode_settings(camera_id, settings)], topic, config, timeout_s)


def remove_settings(
    bootstrap_servers: str,
    camera_id: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Write the camera's tombstone: it is back to the defaults."""
    CAMERAS.write(bootstrap_servers, [encode_removal(camera_id)], topic, config, timeout_s)
