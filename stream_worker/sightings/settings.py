"""Settings of `stream-worker sightings`: each a flag and an env variable `STREAM_WORKER_SIGHTINGS_<NAME>`.

The Kafka, lifecycle and logging settings are the worker's (`ServiceSettings`); the prefix is the
service's own so that the two can share one environment without reading each other's topics.
The grouping defaults come from what a 5 to 30 fps camera sees: a vehicle in view for 1 to 5 s
(20 to 50 frames at 10 fps); a detector that misses up to a few consecutive frames, which a
1.5 s gap bridges even at 5 fps; vehicles of one lane at least a second apart, with other texts.
Silence (a camera that stops sending, e.g. motion-triggered) is wall-clock time, so it must also
outlast the worker's own pauses: 10 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.contracts.sightings import MAX_CANDIDATES
from stream_worker.service.settings import ServiceSettings, load
from stream_worker.sightings.direction import DirectionRules
from stream_worker.sightings.grouping import GroupingRules
from stream_worker.sightings.sighting import VotingRules

ENV_PREFIX = "STREAM_WORKER_SIGHTINGS_"


class SightingsSettings(ServiceSettings):
    """Settings of `stream-worker sightings`. Each --flag-name is also the env variable
    STREAM_WORKER_SIGHTINGS_FLAG_NAME (e.g. --gap-s: STREAM_WORKER_SIGHTINGS_GAP_S); a flag wins
    over its env variable.

    Examples:
      stream-worker sightings --bootstrap-servers kafka:9092
      stream-worker sightings --gap-s 3 --silence-s 10 --min-reads 2
    """

    role: ClassVar[str] = "sightings service"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker sightings")

    metrics_port: int = Field(
        9109, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    group_id: str = Field("stream-worker-sightings", min_length=1, description="Kafka consumer group.")
    input_topic: str = Field(
        topics.PLATES.name, min_length=1, description="Topic of PlateEvent JSON records."
    )
    output_topic: str = Field(
        topics.SIGHTINGS.name, min_length=1, description="Topic for PlateSighting JSON records."
    )
    cameras_topic: str = Field(
        topics.CAMERAS.name,
        min_length=1,
        description="Compacted topic of the cameras' settings, for each camera's plate format: read to "
        "its end before the first pass closes, then followed live. Absent: the default format.",
    )

    # Grouping
    gap_s: float = Field(
        1.5,
        gt=0,
        description="A read joins a pass within this many seconds (capture time) of its reads; the pass "
        "closes once the camera's frames are this far past its last read.",
    )
    silence_s: float = Field(
        10.0,
        gt=0,
        description="A camera whose frames stop coming this long (wall clock, no newer capture time) has "
        "its passes closed; longer than the worker's stalls (Triton retries), or a pass is published "
        "twice (the same sighting id, the second with every read).",
    )
    max_group_s: float = Field(
        30.0,
        gt=0,
        description="A pass closes after this many seconds (a vehicle still in view starts another).",
    )
    max_edit_distance: int = Field(
        2, ge=0, le=8, description="A read whose text is this many edits from a pass's joins it."
    )
    motion_tolerance: float = Field(
        1.5,
        ge=0,
        description="... or whose box is within this many plate widths of where the pass's motion puts it.",
    )
    min_reads: int = Field(1, ge=1, description="Passes with fewer reads publish no sighting.")
    min_region_confidence: float = Field(
        0.3,
        ge=0,
        le=1,
        description="A sighting of a camera with a region (its text read through the region's formats) "
        "whose voted confidence is below this is not a plate: a caption or a fragment whose misread "
        "fits one of the region's formats (0: none dropped for it).",
    )
    publish_non_plates: bool = Field(
        False,
        description="Also publish sightings whose voted text is not a plate of the camera's format "
        "(format_valid false; a caption, a fragment of a receding plate). Default: dropped and counted.",
    )

    # Voting and direction
    candidates: int = Field(5, ge=1, le=MAX_CANDIDATES, description="Candidate texts a sighting lists.")
    direction_min_scale_change: float = Field(
        0.15, gt=0, description="Relative size change over a pass that means approaching or receding."
    )
    direction_min_shift_widths: float = Field(
        1.0, gt=0, description="Sideways travel over a pass, in plate widths, that means left or right."
    )

    # Restarts
    replay_lookback_s: float = Field(
        120.0,
        gt=0,
        description="On assignment, replay the plates published this long before the committed position "
        "(record time) to rebuild passes that straddle it; at least max-group-s + gap-s.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SightingsSettings:
        if self.input_topic == self.output_topic:
            raise ValueError("--input-topic and --output-topic must be two different topics")
        if self.gap_s >= self.max_group_s:
            raise ValueError(f"--gap-s ({self.gap_s}) must be below --max-group-s ({self.max_group_s})")
        if self.replay_lookback_s < self.max_group_s + self.gap_s:
            raise ValueError(
                f"--replay-lookback-s ({self.replay_lookback_s}) must be at least --max-group-s + --gap-s "
                f"({self.max_group_s + self.gap_s}), the longest a pass spans"
            )
        return self

    def grouping_rules(self) -> GroupingRules:
        return GroupingRules(
            gap_s=self.gap_s,
            silence_s=self.silence_s,
            max_group_s=self.max_group_s,
            max_edit_distance=self.max_edit_distance,
            motion_tolerance=self.motion_tolerance,
        )

    def voting_rules(self) -> VotingRules:
        return VotingRules(
            candidates=self.candidates,
            direction=DirectionRules(self.direction_min_scale_change, self.direction_min_shift_widths),
        )


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> SightingsSettings:
    """Settings from CLI args, `STREAM_WORKER_SIGHTINGS_*` env and defaults; `ConfigError` says what
    is wrong. `--help` prints the flags and exits."""
    return load(SightingsSettings, cli_args, **overrides)
