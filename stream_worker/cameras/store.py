"""The cameras' settings on their compacted topic: read whole, write one camera's settings or its
tombstone. The reading and writing are service/compacted.py's (as for the watch list); this adds
the record format (records.py) and the topic's name."""

from __future__ import annotations

from collections.abc import Mapping

from stream_worker.cameras.records import decode_record, encode_removal, encode_settings
from stream_worker.contracts import topics
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.service.compacted import (
    DEFAULT_TIMEOUT_S,
    CompactedSnapshot,
    CompactedTopicError,
    read_compacted,
    write_compacted,
)

DEFAULT_TOPIC = topics.CAMERAS.name
# The camera connector's replicas share the cameras by the topic's partitions (a consumer group over
# it): a topic created here gets as many as the connector and the deployments create it with.
DEFAULT_PARTITIONS = topics.CAMERAS.partitions

CamerasSnapshot = CompactedSnapshot[str, CameraSettings]
CamerasStoreError = CompactedTopicError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TOPIC",
    "CamerasSnapshot",
    "CamerasStoreError",
    "read_cameras",
    "remove_settings",
    "write_settings",
]


def read_cameras(
    bootstrap_servers: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> CamerasSnapshot:
    """Every camera's settings, read to the topic's end; a missing topic has none."""
    return read_compacted(bootstrap_servers, topic, decode_record, config, timeout_s)


def write_settings(
    bootstrap_servers: str,
    camera_id: str,
    settings: CameraSettings,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Store the camera's settings (creating the compacted topic if needed); returns once stored."""
    write_compacted(
        bootstrap_servers,
        topic,
        [encode_settings(camera_id, settings)],
        config,
        timeout_s,
        DEFAULT_PARTITIONS,
    )


def remove_settings(
    bootstrap_servers: str,
    camera_id: str,
    topic: str = DEFAULT_TOPIC,
    config: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Write the camera's tombstone: it is back to the defaults."""
    write_compacted(
        bootstrap_servers, topic, [encode_removal(camera_id)], config, timeout_s, DEFAULT_PARTITIONS
    )
