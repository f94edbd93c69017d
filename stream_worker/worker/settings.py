"""The worker's settings: one pydantic-settings model, each field a CLI flag and an env variable.

Precedence: `stream-worker run --flag` > `STREAM_WORKER_<FIELD>` > default. The CLI comes from
pydantic-settings' own parser (`--max-batch-frames 8`, `--skip-empty`, `--kafka-config k=v`
repeatable), so adding a field here adds its flag, its env variable and its `--help` line.
Everything is validated before the worker connects to anything, with errors naming the flag.
The Kafka, lifecycle and logging settings come from `ServiceSettings`, which every service shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, FilePath, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_"


class WorkerSettings(ServiceSettings):
    """Settings of `stream-worker run`. Each --flag-name is also the env variable
    STREAM_WORKER_FLAG_NAME (e.g. --max-batch-frames: STREAM_WORKER_MAX_BATCH_FRAMES); a flag
    wins over its env variable.

    Examples:
      stream-worker run --bootstrap-servers kafka:9092 --triton-url triton:8001
      STREAM_WORKER_MAX_BATCH_FRAMES=32 stream-worker run --group-id plates-eu
      stream-worker run --kafka-config security.protocol=SASL_SSL --kafka-config sasl.mechanism=PLAIN
    """

    role: ClassVar[str] = "worker"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker run")

    # Where things are (the Kafka connection, lifecycle and logs: ServiceSettings)
    triton_url: str = Field("localhost:8001", min_length=1, description="Triton gRPC address HOST:PORT.")
    triton_tls_ca_file: FilePath | None = Field(
        None,
        description="PEM root certificates that sign Triton's gRPC server certificate; any --triton-tls-* "
        "option switches to TLS (without this one the system's roots verify Triton).",
    )
    triton_tls_cert_file: FilePath | None = Field(
        None, description="PEM client certificate for mutual TLS (with --triton-tls-key-file)."
    )
    triton_tls_key_file: FilePath | None = Field(
        None, description="PEM private key of --triton-tls-cert-file."
    )
    model_name: str = Field("plate_recognition", min_length=1, description="Triton model to call.")
    group_id: str = Field("stream-worker", min_length=1, description="Kafka consumer group.")
    input_topic: str = Field(
        topics.FRAMES.name, min_length=1, description="Topic of JPEG frames (key = camera id)."
    )
    output_topic: str = Field(
        topics.PLATES.name, min_length=1, description="Topic for PlateEvent JSON records."
    )
    dlq_topic: str = Field(
        topics.FRAMES_DLQ.name, min_length=1, description="Dead-letter topic for rejected frames."
    )
    cameras_topic: str = Field(
        topics.CAMERAS.name,
        min_length=1,
        description="Compacted topic of each camera's settings (masks, zones, minimum plate width, "
        "plate pictures; `stream-worker cameras`): read to its end before the first frame, then "
        "followed live. Absent: every camera without settings.",
    )

    # Batching and concurrency
    max_batch_frames: int = Field(16, ge=1, le=1024, description="A batch closes at this many frames ...")
    max_batch_wait_ms: int = Field(25, ge=0, le=60_000, description="... or this long after its first frame.")
    max_inflight_batches: int = Field(4, ge=1, le=256, description="Concurrent Triton requests.")
    max_pending_frames: int = Field(
        256,
        ge=1,
        description="Backpressure: consumption pauses while this many frames are read but not yet "
        "acknowledged, and resumes below half of it.",
    )
    max_frame_bytes: int = Field(
        8 * 1024 * 1024, ge=1, description="Larger frames go to the DLQ (frame_too_large)."
    )
    skip_empty: bool = Field(False, description="Publish no event for frames without plates.")
    plate_images: bool = Field(
        False,
        description="Ask for each plate's picture on every camera's frames: a JPEG of at most 16 KB, "
        "base64 in the event's plates[].image (schema_revision 3). Off: no pictures, at no cost.",
    )

    # Failures
    triton_timeout_s: float = Field(
        60.0, gt=0, description="Deadline of one Triton request (queueing behind other batches included)."
    )
    retry_initial_backoff_s: float = Field(0.2, gt=0, description="First wait before retrying Triton.")
    retry_max_backoff_s: float = Field(5.0, gt=0, description="Longest wait between Triton retries.")
    inference_attempts: int = Field(
        3,
        ge=1,
        le=100,
        description="Attempts for a frame Triton rejects on its own before it goes to the DLQ.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> WorkerSettings:
        if self.retry_max_backoff_s < self.retry_initial_backoff_s:
            raise ValueError(
                f"--retry-max-backoff-s ({self.retry_max_backoff_s}) is below "
                f"--retry-initial-backoff-s ({self.retry_initial_backoff_s})"
            )
        if self.max_pending_frames < self.max_batch_frames:
            raise ValueError(
                f"--max-pending-frames ({self.max_pending_frames}) must be at least "
                f"--max-batch-frames ({self.max_batch_frames}), or no batch could ever fill"
            )
        if (self.triton_tls_cert_file is None) != (self.triton_tls_key_file is None):
            raise ValueError("--triton-tls-cert-file and --triton-tls-key-file come together (mutual TLS)")
        if len({self.input_topic, self.output_topic, self.dlq_topic, self.cameras_topic}) < 4:
            raise ValueError(
                "--input-topic, --output-topic, --dlq-topic and --cameras-topic must be four different topics"
            )
        return self


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> WorkerSettings:
    """Settings from CLI args, `STREAM_WORKER_*` env and defaults; `ConfigError` names what is wrong.

    `--help` in `cli_args` prints the flags and exits (SystemExit), as a CLI would.
    """
    return load(WorkerSettings, cli_args, **overrides)
