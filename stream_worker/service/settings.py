"""The settings every Kafka service of the project has, and how settings models are loaded.

Each service subclasses `ServiceSettings` with its own env prefix, program name and fields; a
field is then a CLI flag (pydantic-settings' own parser: `--kafka-config k=v` repeatable, `-X k=v`
as on every command), an env variable `<PREFIX><FIELD>` and a `--help` line (help_layout.py: in
the layout of every other command). Errors name the flag and the variable at fault and
never echo `kafka_config`, which may hold SASL passwords.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

# librdkafka settings the services decide themselves (at-least-once needs them); each maps to the
# flag that sets it, or to None when it is not adjustable.
RESERVED_KAFKA_SETTINGS: dict[str, str | None] = {
    "bootstrap.servers": "--bootstrap-servers",
    "group.id": "--group-id",
    "enable.auto.commit": None,
    "enable.auto.offset.store": None,
    "enable.idempotence": None,
    "acks": None,
    "request.required.acks": None,
    "transactional.id": None,
    "max.in.flight.requests.per.connection": None,
    "auto.offset.reset": "--auto-offset-reset",
    "session.timeout.ms": "--session-timeout-ms",
}
SECRET_MARKERS = ("password", "secret", "sasl.oauthbearer.config", "ssl.key.pem", "ssl_key")


class ConfigError(ValueError):
    """A setting is invalid; the message names the flag and env variable at fault."""


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


class ServiceSettings(BaseSettings):
    """Kafka connection, lifecycle and observability settings (subclasses add their own)."""

    role: ClassVar[str] = "service"  # how errors name the service ("the worker needs its own value")

    model_config = SettingsConfigDict(
        cli_kebab_case=True,
        cli_implicit_flags=True,
        cli_exit_on_error=False,
        cli_use_class_docs_for_groups=False,
        validate_default=True,
        extra="forbid",
    )

    bootstrap_servers: str = Field("localhost:9092", min_length=1, description="Kafka bootstrap.servers.")
    kafka_config: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="Extra librdkafka setting for the consumer and the producer (SASL/TLS, ...): "
        "--kafka-config key=value, repeatable; env: a JSON object.",
    )
    local_broker: bool = Field(
        False,
        description="The broker is the embedded one (`stream-worker broker`, the demo): publish with "
        "acks=all retries, one request in flight, instead of the idempotent producer, which that "
        "broker can lose a batch of when it is killed. Never set it for Kafka.",
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
                hint = f"use {own_flag} instead" if own_flag else f"the {cls.role} needs its own value"
                raise ValueError(f"{key!r} cannot be set here: {hint}")
            normalized[key] = str(setting).lower() if isinstance(setting, bool) else str(setting)
        return normalized

    @classmethod
    def env_var(cls, field: str) -> str:
        return str(cls.model_config.get("env_prefix", "")) + field.upper()

    def redacted_kafka_config(self) -> dict[str, str]:
        """`kafka_config` fit for logs: secret values replaced."""
        return {
            key: "***" if any(marker in key.lower() for marker in SECRET_MARKERS) else str(value)
            for key, value in self.kafka_config.items()
        }


Settings = TypeVar("Settings", bound=ServiceSettings)


def describe(error: ValidationError, model: type[ServiceSettings]) -> str:
    lines = []
    for item in error.errors():
        location = [str(part) for part in item["loc"]]
        if location:
            field = location[0]
            where = f"{flag(field)} / {model.env_var(field)}"
            if len(location) > 1:
                where += f" [{'.'.join(location[1:])}]"
        else:
            where = "settings"
        message = item["msg"].removeprefix("Value error, ")
        # Never echo kafka_config: it may hold SASL passwords.
        shown = location and location[0] != "kafka_config"
        lines.append(f"{where}: {message} (got {item['input']!r})" if shown else f"{where}: {message}")
    return "invalid settings:\n  " + "\n  ".join(lines)


def load(model: type[Settings], cli_args: Sequence[str] | None = None, **overrides: object) -> Settings:
    """Settings from CLI args, env and defaults; `ConfigError` names what is wrong.

    `--help` (`-h`) in `cli_args` prints the flags in every command's layout and exits (SystemExit
    0), as a CLI would; `-X key=value` is `--kafka-config key=value`, as on every command.
    """
    if cli_args is not None and ("--help" in cli_args or "-h" in cli_args):
        from stream_worker.service.help_layout import print_settings_help

        print_settings_help(model, ServiceSettings.model_fields)
        raise SystemExit(0)
    try:
        if cli_args is None:
            return model(**overrides)
        return model(_cli_parse_args=kafka_config_aliases(cli_args), **overrides)
    except ValidationError as error:
        raise ConfigError(describe(error, model)) from None
    except SettingsError as error:
        raise ConfigError(f"invalid settings: {error}") from None


def kafka_config_aliases(cli_args: Sequence[str]) -> list[str]:
    """The arguments with `-X key=value` (and `-Xkey=value`) spelled `--kafka-config key=value`."""
    spelled: list[str] = []
    for arg in cli_args:
        if arg == "-X":
            spelled.append("--kafka-config")
        elif arg.startswith("-X"):
            spelled += ["--kafka-config", arg[2:]]
        else:
            spelled.append(arg)
    return spelled


def check_kafka_config(settings: ServiceSettings) -> None:
    """Let librdkafka itself judge `kafka_config` (unknown names, bad values, incomplete SASL/TLS).

    A throwaway producer without bootstrap servers parses the settings and connects nowhere.
    """
    from confluent_kafka import KafkaException, Producer

    try:
        Producer({"log_level": 0, **settings.kafka_config})
    except KafkaException as error:
        reason = error.args[0].str()
        named = [key for key in settings.kafka_config if f'"{key}"' in reason]
        where = f"{flag('kafka_config')} / {settings.env_var('kafka_config')}"
        if named:
            where += f" [{named[0]}]"
        raise ConfigError(f"invalid settings:\n  {where}: {reason}") from None
