"""Settings of `stream-worker alerts`: each a flag and an env variable `STREAM_WORKER_ALERTS_<NAME>`.

The Kafka, lifecycle and logging settings are the services' shared ones (`ServiceSettings`); the
prefix is the service's own so that it can share one environment with the worker and the
sightings service. A pass ends like a sightings pass, by capture time: the camera's frames move
on `pass_gap_s` past its last matching read (passes.py says what the wall clock may end).
The sightings topic is read in a consumer group of its own (`sightings_group_id`), and so is the
corrections topic (`corrections_group_id`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_ALERTS_"


class AlertsSettings(ServiceSettings):
    """Settings of `stream-worker alerts`. Each --flag-name is also the env variable
    STREAM_WORKER_ALERTS_FLAG_NAME (e.g. --pass-gap-s: STREAM_WORKER_ALERTS_PASS_GAP_S); a flag wins
    over its env variable.

    Examples:
      stream-worker alerts --bootstrap-servers kafka:9092
      stream-worker alerts --min-confidence 0.6 --default-max-distance 0.5
    """

    role: ClassVar[str] = "alerts service"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker alerts")

    metrics_port: int = Field(
        9110, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    group_id: str = Field("stream-worker-alerts", min_length=1, description="Kafka consumer group.")
    input_topic: str = Field(
        topics.PLATES.name, min_length=1, description="Topic of PlateEvent JSON records."
    )
    output_topic: str = Field(
        topics.ALERTS.name, min_length=1, description="Topic for PlateAlert JSON records."
    )
    watchlist_topic: str = Field(
        topics.WATCHLIST.name,
        min_length=1,
        description="Compacted topic of WatchEntry records (the watch list).",
    )
    sightings_topic: str = Field(
        topics.SIGHTINGS.name,
        min_length=1,
        description="Topic of PlateSighting JSON records: a pass whose reads raised no alert for an entry "
        "alerts once on its sighting (origin sighting) when the voted text or a top candidate matches.",
    )
    sightings_group_id: str = Field(
        "stream-worker-alerts-sightings",
        min_length=1,
        description="Kafka consumer group of the sightings topic (its own, apart from --group-id's).",
    )
    corrections_topic: str = Field(
        topics.CORRECTIONS.name,
        min_length=1,
        description="Compacted topic of the operators' Correction records: a text corrected to one a "
        "watch-list entry matches, where the text as read did not, alerts once (origin correction).",
    )
    corrections_group_id: str = Field(
        "stream-worker-alerts-corrections",
        min_length=1,
        description="Kafka consumer group of the corrections topic (its own).",
    )
    correction_max_age_s: float = Field(
        86_400.0,
        gt=0,
        description="Corrections saved longer ago than this (wall clock) raise no alert: a new group "
        "reads the compacted corrections topic from its beginning.",
    )
    sighting_candidates: int = Field(
        3,
        ge=1,
        le=50,
        description="A sighting's best candidate texts matched against the watch list (its voted text too).",
    )
    sighting_wait_s: float = Field(
        30.0,
        gt=0,
        description="A sighting whose reads this service has yet to consume (a plates backlog) waits for "
        "them at most this long (wall clock), so that it does not alert beside its own reads.",
    )
    max_waiting_sightings: int = Field(
        1_000,
        ge=1,
        description="Sightings waiting for their reads at most: at this many, reading the sightings "
        "topic pauses until half of them are decided.",
    )
    default_max_distance: float = Field(
        1.0,
        ge=0,
        description="Largest weighted edit distance of a read from an entry without its own max_distance "
        "(a known misread such as O for C costs 0.5, any other edit 1).",
    )
    min_confidence: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Reads with a lower recogniser confidence (PlateReading.confidence, the least sure "
        "character's) are not matched.",
    )
    pass_gap_s: float = Field(
        3.0,
        gt=0,
        description="A camera's matching reads of one entry more than this apart (capture time) are "
        "two passes: one alert each. A camera whose frames stop for this long (wall clock) ends its "
        "passes; reads of them that come later (a stalled worker) resume them without an alert.",
    )
    max_pass_s: float = Field(
        60.0,
        gt=0,
        description="A pass ends this long (capture time) after its first read: a plate that stays in "
        "view alerts again, and the commit is not held back for ever.",
    )
    alert_cooldown_s: float = Field(
        10.0,
        ge=0,
        description="After an alert, a camera's reads of the same entry raise no other within this "
        "long (capture time), also across a restart (0: every pass alerts).",
    )
    recent_passes: int = Field(
        10_000,
        ge=1,
        description="Read passes that alerted, remembered so that their sightings publish nothing: at most "
        "this many, the oldest forgotten first.",
    )
    recent_pass_age_s: float = Field(
        900.0,
        gt=0,
        description="A read pass that alerted is remembered this long (wall clock): longer than its "
        "sighting can take to come (a pass's length, the sightings service's silence, lag).",
    )

    history_alerts: int = Field(
        2_000,
        ge=0,
        description="Alerts read back per partition of the alerts topic at the start, then followed: "
        "read alerts of this service's earlier run or of another replica, so that their passes' "
        "sightings publish nothing (0: none).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> AlertsSettings:
        names = {
            self.input_topic,
            self.output_topic,
            self.watchlist_topic,
            self.sightings_topic,
            self.corrections_topic,
        }
        if len(names) != 5:
            raise ValueError(
                "--input-topic, --output-topic, --watchlist-topic, --sightings-topic and "
                "--corrections-topic must be five different topics"
            )
        if len({self.group_id, self.sightings_group_id, self.corrections_group_id}) != 3:
            raise ValueError("--group-id, --sightings-group-id and --corrections-group-id must differ")
        if self.recent_pass_age_s <= self.max_pass_s:
            raise ValueError(
                f"--recent-pass-age-s ({self.recent_pass_age_s}) must be above "
                f"--max-pass-s ({self.max_pass_s})"
            )
        if self.pass_gap_s >= self.max_pass_s:
            raise ValueError(
                f"--pass-gap-s ({self.pass_gap_s}) must be below --max-pass-s ({self.max_pass_s})"
            )
        return self


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> AlertsSettings:
    """Settings from CLI args, `STREAM_WORKER_ALERTS_*` env and defaults; `ConfigError` says what is
    wrong. `--help` prints the flags and exits."""
    return load(AlertsSettings, cli_args, **overrides)
