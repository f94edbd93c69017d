"""Settings of `stream-worker visits`: each a flag and an env variable `STREAM_WORKER_VISITS_<NAME>`.

The Kafka, lifecycle and logging settings are every service's (`ServiceSettings`). Which cameras
are a site's entry or exit, and a site's own overstay limit, are camera settings (`site`), followed
live from the cameras topic; a plate's own limit is its watch-list entry's (`overstay_s`), followed
live from the watchlist topic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.contracts.cameras import MAX_OVERSTAY_S
from stream_worker.contracts.watchlist import LIST_PATTERN, MAX_LIST_LENGTH
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_VISITS_"


class VisitsSettings(ServiceSettings):
    """Settings of `stream-worker visits`. Each --flag-name is also the env variable
    STREAM_WORKER_VISITS_FLAG_NAME (e.g. --overstay-s: STREAM_WORKER_VISITS_OVERSTAY_S); a flag wins
    over its env variable.

    Examples:
      stream-worker visits --bootstrap-servers kafka:9092
      stream-worker visits --overstay-s 7200 --max-distance 0.5
      stream-worker visits --list-overstay-s '{"deliveries": 1800, "residents": 0}'
    """

    role: ClassVar[str] = "visits service"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker visits")

    metrics_port: int = Field(
        9114, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    group_id: str = Field("stream-worker-visits", min_length=1, description="Kafka consumer group.")
    input_topic: str = Field(
        topics.SIGHTINGS.name, min_length=1, description="Topic of PlateSighting JSON records."
    )
    output_topic: str = Field(
        topics.VISITS.name,
        min_length=1,
        description="Topic for PlateVisit JSON records (key: the site), read back whole at the start "
        "to rebuild the open visits: its retention must outlast the longest visit.",
    )
    cameras_topic: str = Field(
        topics.CAMERAS.name,
        min_length=1,
        description="Compacted topic of the cameras' settings, for each camera's site and role: read to "
        "its end before the first sighting, then followed live.",
    )
    watchlist_topic: str = Field(
        topics.WATCHLIST.name,
        min_length=1,
        description="Compacted topic of WatchEntry records: a plate's own overstay limit (overstay_s), or "
        "its list's (--list-overstay-s). Read to its end before the first sighting, then followed live.",
    )
    max_distance: float = Field(
        1.0,
        ge=0,
        description="Largest weighted edit distance between an exit's (or a re-entry's) text and an open "
        "visit's plate that still pairs them, as the watch lists match (O for C costs 0.5).",
    )
    overstay_s: float = Field(
        0.0,
        ge=0,
        le=MAX_OVERSTAY_S,
        description="A visit lasting longer than this raises one overstay event, unless its entry "
        "camera's site sets its own limit (0: none).",
    )
    list_overstay_s: dict[str, float] = Field(
        default_factory=dict,
        description='Per watch list, as JSON ({"deliveries": 1800}): the limit of a visit whose plate is on '
        "that list (watch or allow), before its site's; 0: its visits never overstay. An entry's own "
        "overstay_s comes first.",
    )
    overstay_grace_s: float = Field(
        60.0,
        ge=0,
        description="Open visits are checked for overstays against the latest capture time read (with "
        "nothing to read, the wall clock) less this: an exit sighting still on its way comes first.",
    )
    exit_wait_s: float = Field(
        30.0,
        ge=0,
        description="An exit sighting that closes no open visit waits this long (wall clock) for its "
        "entry, which another partition may bring later; its offset is not committed meanwhile.",
    )
    remembered: int = Field(
        100_000,
        ge=1,
        description="Decided sightings and closed visits remembered, so that a replay decides none "
        "twice: at most this many, the oldest forgotten first.",
    )

    @field_validator("list_overstay_s")
    @classmethod
    def _list_limits(cls, value: dict[str, float]) -> dict[str, float]:
        for name, seconds in value.items():
            if not re.fullmatch(LIST_PATTERN, name) or len(name) > MAX_LIST_LENGTH:
                raise ValueError(f"{name!r} is not a watch list's name (a lowercase slug)")
            if not 0 <= seconds <= MAX_OVERSTAY_S:
                raise ValueError(f"{name}: {seconds} is not a limit from 0 to {MAX_OVERSTAY_S:.0f} seconds")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> VisitsSettings:
        topics = {self.input_topic, self.output_topic, self.cameras_topic, self.watchlist_topic}
        if len(topics) != 4:
            raise ValueError(
                "--input-topic, --output-topic, --cameras-topic and --watchlist-topic must be four "
                "different topics"
            )
        return self


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> VisitsSettings:
    """Settings from CLI args, `STREAM_WORKER_VISITS_*` env and defaults; `ConfigError` says what is
    wrong. `--help` prints the flags and exits."""
    return load(VisitsSettings, cli_args, **overrides)
