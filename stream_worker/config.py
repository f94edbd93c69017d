"""The worker's settings: one pydantic-settings model, each field a CLI flag and an env variable.

Precedence: `stream-worker run --flag` > `STREAM_WORKER_<FIELD>` > default. The CLI comes from
pydantic-settings' own parser (`--max-batch-frames 8`, `--skip-empty`, `--kafka-config k=v`
repeatable), so adding a field here adds its flag, its env variable and its `--help` line.
Everything is validated before the worker connects to anything, with errors naming the flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, FilePath, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

ENV_PREFIX = "STREAM_WORKER_"

# librdkafka settings the worker decides itself (at-least-once needs them); each maps to the flag
# that sets it, or to None when it is not adjustable.
RESERVED_KAFKA_SETTINGS: dict[str, str | None] = {
    "bootstrap.servers": "--bootstrap-servers",
    "group.id": "--group-id",
    "enable.auto.commit": None,
    "enable.auto.offset.store": None,
    "enable.idempotence": None,
    "acks": None,
    "request.required.acks": None,
    "transactional.id": None,
    "auto.offset.reset": "--auto-offset-reset",
    "session.timeout.ms": "--session-timeout-ms",
}
SECRET_MARKERS = ("password", "secret", "sasl.oauthbearer.config", "ssl.key.pem", "ssl_key")


class ConfigError(ValueError):
    """A setting is invalid; the message names the flag and env variable at fault."""


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def env_var(field: str) -> str:
    return ENV_PREFIX + field.upper()


class WorkerSettings(BaseSettings):
    """Settings of `stream-worker run`. Each --flag-name is also the env variable
    STREAM_WORKER_FLAG_NAME (e.g. --max-batch-frames: STREAM_WORKER_MAX_BATCH_FRAMES); a flag
    wins over its env variable.

    Examples:
      stream-worker run --bootstrap-servers kafka:9092 --triton-url triton:8001
      STREAM_WORKER_MAX_BATCH_FRAMES=32 stream-worker run --group-id plates-eu
      stream-worker run --kafka-config security.protocol=SASL_SSL --kafka-config sasl.mechanism=PLAIN
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        cli_prog_name="stream-worker run",
        cli_kebab_case=True,
        cli_implicit_flags=True,
        cli_exit_on_error=False,
        cli_use_class_docs_for_groups=False,
        validate_default=True,
        extra="forbid",
    )

    # Where things are
    bootstrap_servers: str = Field("localhost:9092", min_length=1, description="Kafka bootstrap.servers.")
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
    input_topic: str = Field("frames", min_length=1, description="Topic of JPEG frames (key = camera id).")
    output_topic: str = Field("plates", min_length=1, description="Topic for PlateEvent JSON records.")
    dlq_topic: str = Field("frames.dlq", min_length=1, description="Dead-letter topic for rejected frames.")
    kafka_config: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="Extra librdkafka setting for the consumer and the producer (SASL/TLS, ...): "
        "--kafka-config key=value, repeatable; env: a JSON object.",
    )
    auto_offset_reset: Literal["earliest", "latest"] = Field(
        "earliest", description="Where a group without a committed offset starts."
    )
    session_timeout_ms: int = Field(
        45000,
        ge=1000,
        le=3_600_000,
        description="Consumer group session timeout (librdkafka session.timeout.ms).",
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

    # Lifecycle and observability
    shutdown_timeout_s: float = Field(
        30.0, gt=0, description="SIGTERM/SIGINT: drain, flush and commit within this, then exit 0."
    )
    revoke_timeout_s: float = Field(
        10.0, ge=0, description="On rebalance, how long to finish in-flight work of revoked partitions."
    )
    metrics_port: int = Field(
        9108, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    metrics_host: str = Field("0.0.0.0", description="Address the HTTP server binds.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")

    @field_validator("kafka_config", mode="after")
    @classmethod
    def _kafka_config_keys(cls, value: dict[str, str | int | float | bool]) -> dict[str, str]:
        normalized = {}
        for key, setting in value.items():
            key = key.strip()
            if not key:
                raise ValueError("a setting has an empty name")
            if key in RESERVED_KAFKA_SETTINGS:
                own_flag = RESERVED_KAFKA_SETTINGS[key]
                hint = f"use {own_flag} instead" if own_flag else "the worker needs its own value"
                raise ValueError(f"{key!r} cannot be set here: {hint}")
            normalized[key] = str(setting).lower() if isinstance(setting, bool) else str(setting)
        return normalized

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
        if len({self.input_topic, self.output_topic, self.dlq_topic}) < 3:
            raise ValueError("--input-topic, --output-topic and --dlq-topic must be three different topics")
        return self

    def redacted_kafka_config(self) -> dict[str, str]:
        """`kafka_config` fit for logs: secret values replaced."""
        return {
            key: "***" if any(marker in key.lower() for marker in SECRET_MARKERS) else str(value)
            for key, value in self.kafka_config.items()
        }


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        location = [str(part) for part in item["loc"]]
        if location:
            field = location[0]
            where = f"{flag(field)} / {env_var(field)}"
            if len(location) > 1:
                where += f" [{'.'.join(location[1:])}]"
        else:
            where = "settings"
        message = item["msg"].removeprefix("Value error, ")
        # Never echo kafka_config: it may hold SASL passwords.
        shown = location and location[0] != "kafka_config"
        lines.append(f"{where}: {message} (got {item['input']!r})" if shown else f"{where}: {message}")
    return "invalid settings:\n  " + "\n  ".join(lines)


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> WorkerSettings:
    """Settings from CLI args, `STREAM_WORKER_*` env and defaults; `ConfigError` names what is wrong.

    `--help` in `cli_args` prints the flags and exits (SystemExit), as a CLI would.
    """
    try:
        if cli_args is None:
            return WorkerSettings(**overrides)
        return WorkerSettings(_cli_parse_args=list(cli_args), **overrides)
    except ValidationError as error:
        raise ConfigError(_describe(error)) from None
    except SettingsError as error:
        raise ConfigError(f"invalid settings: {error}") from None


def check_kafka_config(settings: WorkerSettings) -> None:
    """Let librdkafka itself judge `kafka_config` (unknown names, bad values, incomplete SASL/TLS).

    A throwaway producer without bootstrap servers parses the settings and connects nowhere.
    """
    from confluent_kafka import KafkaException, Producer

    try:
        Producer({"log_level": 0, **settings.kafka_config})
    except KafkaException as error:
        reason = error.args[0].str()
        named = [key for key in settings.kafka_config if f'"{key}"' in reason]
        where = f"{flag('kafka_config')} / {env_var('kafka_config')}"
        if named:
            where += f" [{named[0]}]"
        raise ConfigError(f"invalid settings:\n  {where}: {reason}") from None
