"""Settings of `stream-worker notify`: each a flag and an env variable `STREAM_WORKER_NOTIFY_<NAME>`.

The Kafka, lifecycle and logging settings are the services' shared ones (`ServiceSettings`). The
targets themselves are not settings of the process: they are records of the compacted
`--targets-topic`, followed live (`stream-worker notify targets set`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field, FilePath, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_NOTIFY_"


class NotifySettings(ServiceSettings):
    """Settings of `stream-worker notify`. Each --flag-name is also the env variable
    STREAM_WORKER_NOTIFY_FLAG_NAME (e.g. --retry-budget-s: STREAM_WORKER_NOTIFY_RETRY_BUDGET_S); a
    flag wins over its env variable. The targets' secrets (${NAME}) come from --secrets-file or
    STREAM_WORKER_SECRET_<NAME> variables, never from any other variable.

    Examples:
      stream-worker notify --bootstrap-servers kafka:9092
      stream-worker notify --retry-budget-s 600 --max-backoff-s 60
      stream-worker notify targets set gate --file gate.yaml
    """

    role: ClassVar[str] = "notify service"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker notify")

    metrics_port: int = Field(
        9113, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    group_id: str = Field("stream-worker-notify", min_length=1, description="Kafka consumer group.")
    input_topic: str = Field(
        topics.ALERTS.name, min_length=1, description="Topic of PlateAlert JSON records."
    )
    sightings_topic: str = Field(
        topics.SIGHTINGS.name,
        min_length=1,
        description="Topic of PlateSighting JSON records: the unknown vehicles of targets with allow lists.",
    )
    sightings_group_id: str = Field(
        "stream-worker-notify-sightings",
        min_length=1,
        description="Kafka consumer group of the sightings topic (its own, apart from --group-id's).",
    )
    visits_topic: str = Field(
        topics.VISITS.name,
        min_length=1,
        description="Topic of PlateVisit JSON records: their overstay events go to the targets asking "
        "for overstays.",
    )
    visits_group_id: str = Field(
        "stream-worker-notify-visits",
        min_length=1,
        description="Kafka consumer group of the visits topic (its own, apart from the other two).",
    )
    watchlist_topic: str = Field(
        topics.WATCHLIST.name,
        min_length=1,
        description="Compacted topic of WatchEntry records (the allow lists).",
    )
    allow_max_distance: float = Field(
        1.0,
        ge=0,
        description="A sighting's text (or a top candidate) within this weighted edit distance of an allow "
        "entry without its own max_distance is that vehicle: no unknown_vehicle event for it.",
    )
    targets_topic: str = Field(
        topics.NOTIFY_TARGETS.name,
        min_length=1,
        description="Compacted topic of NotifyTarget records (by name).",
    )
    dlq_topic: str = Field(
        topics.NOTIFY_DLQ.name,
        min_length=1,
        description="Alerts a target did not take within --retry-budget-s (or refused for good), with "
        "the target and the last error in the headers.",
    )
    deliveries_topic: str = Field(
        topics.NOTIFY_DELIVERIES.name,
        min_length=1,
        description="The delivery log: one NotifyDelivery record per outcome (sent, retried, failed, "
        "dropped), keyed by target, which the console shows.",
    )
    tests_topic: str = Field(
        topics.NOTIFY_TESTS.name,
        min_length=1,
        description='Compacted topic of the console\'s "send a test" requests (NotifyTest by target '
        "name): each new one, while this service runs, is a test alert delivered to that target.",
    )
    status_topic: str = Field(
        topics.NOTIFY_STATUS.name,
        min_length=1,
        description="Compacted topic where the service says which target secrets it has (their names, "
        "never a value), so that `notify targets set` and the console warn of a missing one.",
    )
    replays_topic: str = Field(
        topics.NOTIFY_REPLAYS.name,
        min_length=1,
        description="Dead letters sent again (`notify dlq replay`), read in the group --group-id + "
        "'-replays': each goes to its target with the same event id.",
    )
    allow_private_targets: bool = Field(
        False,
        description="Deliver to targets whose address is loopback, private, link-local or a cloud "
        "metadata address. Off: such a target is refused, so that whoever edits the targets cannot "
        "make this service reach inside the network.",
    )
    ca_file: FilePath | None = Field(
        None,
        description="PEM roots that https targets' certificates are verified against instead of the "
        "system's (a private CA). Verification is never off.",
    )
    secrets_file: Path | None = Field(
        None,
        description="The target secrets that targets name as ${NAME}: NAME=value lines, mode 0600 (refused "
        "if others may read it), read again when it changes. Besides it, only STREAM_WORKER_SECRET_<NAME> "
        "variables are target secrets; no other variable can be named.",
    )
    console_url: str | None = Field(
        None,
        description="The console's public address (e.g. https://plates.example.com): each event's JSON "
        "then carries `picture_url`, its sighting's plate picture there. None: no picture_url.",
    )
    retry_budget_s: float = Field(
        300.0,
        gt=0,
        description="How long (from the alert's arrival) a target that fails is retried before the "
        "alert goes to --dlq-topic.",
    )
    initial_backoff_s: float = Field(0.5, gt=0, description="Wait after a target's first failed attempt.")
    max_backoff_s: float = Field(
        30.0, gt=0, description="The wait doubles after each failed attempt, up to this."
    )
    max_pending: int = Field(
        10_000,
        ge=1,
        description="Deliveries not yet settled at most: at this many, reading the alerts topic pauses "
        "until half of them are.",
    )

    @field_validator("console_url")
    @classmethod
    def _http_address(cls, url: str | None) -> str | None:
        if url is not None and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
            raise ValueError(
                "must be an http:// or https:// address without a query, e.g. https://plates.example.com"
            )
        return url

    @model_validator(mode="after")
    def _consistent(self) -> NotifySettings:
        names = {
            self.input_topic,
            self.sightings_topic,
            self.visits_topic,
            self.watchlist_topic,
            self.targets_topic,
            self.dlq_topic,
            self.deliveries_topic,
            self.tests_topic,
            self.status_topic,
            self.replays_topic,
        }
        if len(names) != 10:
            raise ValueError(
                "--input-topic, --sightings-topic, --visits-topic, --watchlist-topic, --targets-topic, "
                "--dlq-topic, --deliveries-topic, --tests-topic, --status-topic and --replays-topic must "
                "be ten different topics"
            )
        if len({self.group_id, self.sightings_group_id, self.visits_group_id}) != 3:
            raise ValueError("--group-id, --sightings-group-id and --visits-group-id must differ")
        if self.initial_backoff_s > self.max_backoff_s:
            raise ValueError(
                f"--initial-backoff-s ({self.initial_backoff_s}) must not exceed "
                f"--max-backoff-s ({self.max_backoff_s})"
            )
        return self


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> NotifySettings:
    """Settings from CLI args, `STREAM_WORKER_NOTIFY_*` env and defaults; `ConfigError` says what is
    wrong. `--help` prints the flags and exits."""
    return load(NotifySettings, cli_args, **overrides)
