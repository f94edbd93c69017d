"""Settings of `stream-worker connect`: each a flag and an env variable `STREAM_WORKER_CONNECT_<NAME>`.

The Kafka, lifecycle and logging settings are the services' own (`ServiceSettings`). The defaults
come from what a camera does: a stream silent for 5 s is stalled (an IP camera sends frames every
40-200 ms and a key frame every 1-4 s); a camera that went away is tried again after 0.5 s, then
twice as long each time up to 8 s (so a camera is read
again within 10 s of its return); a queue of 20 frames is 4 s of a 5 fps camera, longer than a
broker's leader election, and 20 JPEGs of 1080p are about 6 MB.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.cameras.store import DEFAULT_PARTITIONS as CAMERAS_PARTITIONS
from stream_worker.contracts import topics
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_CONNECT_"


class ConnectorSettings(ServiceSettings):
    """Settings of `stream-worker connect`. Each --flag-name is also the env variable
    STREAM_WORKER_CONNECT_FLAG_NAME (e.g. --stall-timeout-s: STREAM_WORKER_CONNECT_STALL_TIMEOUT_S);
    a flag wins over its env variable. Camera credentials are other env variables, named by the
    cameras' source URLs (${NAME}).

    Examples:
      stream-worker connect --bootstrap-servers kafka:9092
      stream-worker connect --frames-topic frames --queue-frames 50 --stall-timeout-s 10
    """

    role: ClassVar[str] = "camera connector"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker connect")

    metrics_port: int = Field(
        9111, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    session_timeout_ms: int = Field(
        10000,
        ge=1000,
        le=3_600_000,
        description="Consumer group session timeout: a replica silent this long (killed, its node "
        "gone) loses its cameras to the others.",
    )
    group_id: str = Field(
        "stream-worker-connector",
        min_length=1,
        description="Consumer group over the cameras topic that shares the cameras between replicas "
        "(one camera, one replica: each reads the cameras of the partitions it is assigned).",
    )
    frames_topic: str = Field(
        topics.FRAMES.name, min_length=1, description="Topic the JPEG frames are published to."
    )
    cameras_topic: str = Field(
        topics.CAMERAS.name, min_length=1, description="Compacted camera-settings topic."
    )
    worker_group_id: str = Field(
        "stream-worker",
        min_length=1,
        description="The workers' consumer group on the frames topic: how far behind it is sets how "
        "many frames of a live camera are shed (its source's max_delay_s).",
    )
    status_topic: str = Field(
        topics.CAMERA_STATUS.name,
        min_length=1,
        description="Compacted topic of each camera's status (key: camera id), read by `cameras status`.",
    )
    cameras_partitions: int = Field(
        CAMERAS_PARTITIONS,
        ge=1,
        le=1000,
        description="Partitions of the cameras topic when the connector creates it (an existing topic "
        "is left as it is): at most this many replicas share the cameras.",
    )
    replica_id: str = Field(
        default_factory=socket.gethostname,
        min_length=1,
        description="This replica's name in the status records (default: the host name, a pod's name).",
    )
    queue_frames: int = Field(
        20, ge=1, le=10_000, description="Frames a camera may have waiting for the producer; the oldest go."
    )
    stall_timeout_s: float = Field(
        5.0, gt=0, description="A stream that gives no frame for this long is closed and opened again."
    )
    open_timeout_s: float = Field(10.0, gt=0, description="How long opening a source may take.")
    backoff_base_s: float = Field(0.5, gt=0, description="First wait before a failed camera is tried again.")
    backoff_cap_s: float = Field(8.0, gt=0, description="Longest wait between tries of a failed camera.")
    status_interval_s: float = Field(
        5.0, gt=0, description="How often each camera's status record is written (and on every change)."
    )
    static_key_frames_s: float = Field(
        0.0,
        ge=0,
        description="With motion gating: a camera static this many seconds decodes only its key frames "
        "until one shows motion (about 8x less decoding on a still 1080p25 scene with a key frame "
        "every 2 s); motion is then noticed up to one key-frame interval late, without pre-roll. "
        "0: every frame is decoded.",
    )
    static_markers: bool = Field(
        True,
        description="With motion gating: each sampled frame the gate finds static is published as a "
        "static marker (no image, the header static=WIDTHxHEIGHT), which the worker answers with a "
        "not-examined event, so that the sightings service sees the camera watched.",
    )
    static_marker_interval_s: float = Field(
        1.0,
        ge=0,
        description="With static markers: one marker per this many seconds while a camera is static, "
        "and one for the last static frame before each examined one (the not-examined time stays "
        "exact for the sightings and alerts services). 0: a marker per static frame.",
    )
    decode_threads: int = Field(
        1, ge=0, le=64, description="FFmpeg decoding threads per camera (0: FFmpeg decides)."
    )
    hwaccel: str | None = Field(
        None,
        description="FFmpeg hardware decoding device type (cuda, vaapi, qsv, videotoolbox); decoding "
        "falls back to software when the device or codec is not available. Unset: software.",
    )
    producer_buffer_kbytes: int = Field(
        65536,
        ge=1024,
        description="librdkafka's queue.buffering.max.kbytes: frames waiting in the producer (all "
        "cameras); when full, frames wait in the cameras' queues, which drop their oldest.",
    )
    max_frame_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="librdkafka's message.max.bytes for a JPEG frame."
    )

    @model_validator(mode="after")
    def _consistent(self) -> ConnectorSettings:
        names = [self.frames_topic, self.cameras_topic, self.status_topic]
        if len(set(names)) != len(names):
            raise ValueError("--frames-topic, --cameras-topic and --status-topic must be three topics")
        if self.backoff_base_s > self.backoff_cap_s:
            raise ValueError("--backoff-base-s must not be above --backoff-cap-s")
        return self


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> ConnectorSettings:
    """Settings from CLI args, `STREAM_WORKER_CONNECT_*` env and defaults; `ConfigError` says what
    is wrong. `--help` prints the flags and exits."""
    return load(ConnectorSettings, cli_args, **overrides)
