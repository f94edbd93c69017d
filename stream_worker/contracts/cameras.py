"""The camera-settings contract: one `CameraSettings` per camera on the compacted topic `cameras`.

Polygons are in coordinates normalised to the frame ([0, 0] top left, [1, 1] bottom right), so
one file fits every resolution a camera sends. A camera without settings (no record, or its
tombstone) has `CameraSettings()`: no masks, no zones, no minimum width, no plate pictures, which
is what the worker did before cameras had settings. Bad settings are refused whole, each problem
named by where it is (`masks[1] point 3 x`, `zones[0] ('gate') polygon`), see `settings_problems`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from stream_worker.contracts.base import OmitsAbsent
from stream_worker.contracts.credentials import url_problem
from stream_worker.contracts.plate_formats import DEFAULT_REGION, known_regions
from stream_worker.contracts.polygons import polygon_problem

MAX_POINTS = 64  # per polygon: a plate is tested against every edge of every mask and zone
MAX_POLYGONS = 32  # masks, and zones, per camera
MAX_NAME_LENGTH = 64
MAX_DISPLAY_NAME_LENGTH = 200
MAX_URL_LENGTH = 2048
DEFAULT_MAX_DELAY_S = 5.0  # a live camera's frames reach the worker within this, else frames are shed
MAX_DELAY_S = 3600.0
MAX_PLATE_FORMAT_LENGTH = 200
# A camera's own detector scales (Triton's `detector_scales` input): at most this many, each at most
# this fraction of 640 pixels for the frame's long side (plate_recognition/1/detections.py).
MAX_DETECTOR_SCALES = 4
MAX_DETECTOR_SCALE = 4.0
REGION_CODE = r"^[a-z]{2,8}(?:-[a-z0-9]{1,3})?$"  # as the formats book writes them: us, eu, auto, us-ca
# Validation context under which a region this version does not know is kept rather than refused:
# the followers of the `cameras` topic, where a newer version may have written it (`parse_settings`).
KEEP_UNKNOWN_REGION = "keep_unknown_region"
DEFAULT_SOURCE_FPS = 5.0  # a vehicle at a gate is in view for seconds: 5 reads a second is plenty
MAX_SOURCE_FPS = 60.0
DEFAULT_JPEG_QUALITY = 90
DEFAULT_PIXEL_THRESHOLD = 25
DEFAULT_MIN_CHANGED_SHARE = 0.002
DEFAULT_PRE_ROLL_S = 1.0
DEFAULT_POST_ROLL_S = 1.0  # after the motion gate's 1 s settle (cameras/motion.SETTLE_S): 2 s of a stop
DEFAULT_HEARTBEAT_S = 10.0
MAX_ROLL_S = 30.0
MAX_OVERSTAY_S = 366 * 86400.0
SITE_NAME = r"^[a-z0-9][a-z0-9_-]*$"
MAX_HEARTBEAT_S = 3600.0

Coordinate = Annotated[
    float,
    # strict: "0.5" in a file is a mistake to point out, not a number to guess
    Field(strict=True, ge=0, le=1, allow_inf_nan=False),
]
Point = tuple[Coordinate, Coordinate]


def _simple_polygon(points: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    problem = polygon_problem(points)
    if problem is not None:
        raise ValueError(f"not a simple polygon: {problem}")
    return points


Polygon = Annotated[
    tuple[Point, ...],
    Field(
        min_length=3,
        max_length=MAX_POINTS,
        description="[x, y] points normalised to the frame (0..1, [0, 0] top left), closed implicitly; "
        "not self-intersecting (no two non-adjacent edges cross or touch), non-zero area.",
        examples=[[[0.0, 0.0], [0.4, 0.0], [0.4, 0.3], [0.0, 0.3]]],
    ),
    AfterValidator(_simple_polygon),
]


class Zone(BaseModel):
    """A named area; a plate whose box centre lies inside is tagged with the name."""

    model_config = ConfigDict(title="CameraZone", extra="forbid", frozen=True)

    name: str = Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description="Unique within the camera; copied into the events of plates inside the zone.",
        examples=["lane-1"],
    )
    polygon: Polygon

    @field_validator("name")
    @classmethod
    def _trimmed(cls, value: str) -> str:
        if value.strip() != value or not value.isprintable():
            raise ValueError("must have no leading/trailing spaces and no control characters")
        return value


class RtspTransport(StrEnum):
    TCP = "tcp"  # interleaved in the RTSP connection: works through NAT and firewalls, no loss
    UDP = "udp"  # lower latency on a clean network; packets lost are frames damaged


class CameraSource(OmitsAbsent):
    """Where the camera connector reads the camera (`stream-worker connect`), and how often it samples."""

    model_config = ConfigDict(title="CameraSource", extra="forbid", frozen=True)
    omitted_when_absent: ClassVar[frozenset[str]] = frozenset({"rtsp_transport", "max_delay_s"})

    url: str = Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="rtsp://, rtsps://, http(s):// (MJPEG or HLS) or a local video file (a path or "
        "file://). Credentials never in clear: write ${NAME} for them (rtsp://${GATE_USER}:"
        "${GATE_PASSWORD}@host/stream); the connector takes NAME from its environment.",
        examples=["rtsp://${GATE_USER}:${GATE_PASSWORD}@10.0.0.21:554/stream1", "/videos/gate.mp4"],
    )
    fps: float = Field(
        DEFAULT_SOURCE_FPS,
        gt=0,
        le=MAX_SOURCE_FPS,
        allow_inf_nan=False,
        description="Frames per second sampled from the stream by its timestamps (at most the stream's).",
    )
    rtsp_transport: RtspTransport | None = Field(None, description="RTSP only: tcp (default) or udp.")
    jpeg_quality: int = Field(
        DEFAULT_JPEG_QUALITY, strict=True, ge=1, le=100, description="Quality of the JPEG frames published."
    )
    loop: bool = Field(
        False, strict=True, description="A file source starts again at its end (demos, tests)."
    )
    max_delay_s: float | None = Field(
        None,
        ge=0,
        le=MAX_DELAY_S,
        allow_inf_nan=False,
        description="Longest wait, in seconds, of a live camera's frames for the workers: when they "
        "fall behind, the connector publishes fewer of its frames (counted as shed) so that what is "
        f"read stays this fresh. Unset: {DEFAULT_MAX_DELAY_S:g} s; 0: never shed. A file source's "
        "frames are never shed.",
    )

    @field_validator("url")
    @classmethod
    def _no_clear_credentials(cls, url: str) -> str:
        problem = url_problem(url)
        if problem is not None:
            raise ValueError(problem)
        return url


class MotionSettings(BaseModel):
    """Motion gating: only frames where something moves are examined for plates (with a pre- and
    post-roll around them and a heartbeat while static). Changes are measured on a small grayscale
    copy of the frame against a running background, the camera's masks left out."""

    model_config = ConfigDict(title="MotionSettings", extra="forbid", frozen=True)

    enabled: bool = Field(True, strict=True, description="false: every sampled frame is examined.")
    pixel_threshold: int = Field(
        DEFAULT_PIXEL_THRESHOLD,
        strict=True,
        ge=1,
        le=255,
        description="A pixel has changed when it differs from the background by more than this (0..255).",
    )
    min_changed_share: float = Field(
        DEFAULT_MIN_CHANGED_SHARE,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="A frame has motion when at least this share of its unmasked pixels changed.",
    )
    pre_roll_s: float = Field(
        DEFAULT_PRE_ROLL_S,
        ge=0,
        le=MAX_ROLL_S,
        allow_inf_nan=False,
        description="Seconds of frames before the motion that are published too (the connector only).",
    )
    post_roll_s: float = Field(
        DEFAULT_POST_ROLL_S,
        ge=0,
        le=MAX_ROLL_S,
        allow_inf_nan=False,
        description="Seconds of frames after the motion ends that are still examined.",
    )
    heartbeat_s: float = Field(
        DEFAULT_HEARTBEAT_S,
        gt=0,
        le=MAX_HEARTBEAT_S,
        allow_inf_nan=False,
        description="While static, one frame every this many seconds is still published and examined.",
    )


class SiteRole(StrEnum):
    """What a camera sees of a site: the vehicles coming in, or going out."""

    ENTRY = "entry"
    EXIT = "exit"


class CameraSite(OmitsAbsent):
    """The site a camera watches the way in or out of: the visits service pairs a plate's entry
    sighting with its later exit sighting of the same site into a visit."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    omitted_when_absent: ClassVar[frozenset[str]] = frozenset({"overstay_s"})

    name: str = Field(
        min_length=1, max_length=MAX_NAME_LENGTH, pattern=SITE_NAME, description="The site, a slug."
    )
    role: SiteRole
    overstay_s: float | None = Field(
        None,
        gt=0,
        le=MAX_OVERSTAY_S,
        allow_inf_nan=False,
        description="Entry cameras: a visit they open raises an overstay event once it lasts longer "
        "than this; null: the visits service's --overstay-s.",
    )


class CameraSettings(OmitsAbsent):
    """One camera's settings (value of a `cameras` record; key = the camera id), JSON-encoded."""

    model_config = ConfigDict(title="CameraSettings", extra="forbid", frozen=True)
    # Added compatibly: left out when absent, so that older settings stay byte-for-byte.
    omitted_when_absent: ClassVar[frozenset[str]] = frozenset(
        {"source", "motion", "plate_format", "region", "detector_scales", "site"}
    )

    schema_version: Literal[1] = 1
    display_name: str | None = Field(
        None, max_length=MAX_DISPLAY_NAME_LENGTH, description="A name for people: dashboards, the demo."
    )
    masks: tuple[Polygon, ...] = Field(
        (),
        max_length=MAX_POLYGONS,
        description="Areas where plates are ignored: a plate whose box centre lies inside any mask is "
        "dropped (and counted).",
    )
    zones: tuple[Zone, ...] = Field(
        (),
        max_length=MAX_POLYGONS,
        description="Named areas, in order: a plate is tagged with the first zone containing its box "
        "centre, or none.",
    )
    min_plate_width: int | None = Field(
        None,
        strict=True,
        ge=1,
        description="Plates whose box is narrower than this many pixels are dropped; null: no minimum.",
    )
    plate_images: bool = Field(
        False, strict=True, description="Whether events carry a picture of each plate."
    )
    source: CameraSource | None = Field(
        None, description="Where the camera connector reads the camera; null: frames come from elsewhere."
    )
    motion: MotionSettings | None = Field(
        None,
        description="Motion gating by the connector and the worker; null: every frame is examined.",
    )
    plate_format: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PLATE_FORMAT_LENGTH,
        description="Regular expression a sighting's voted text must match to be published as a plate; "
        "null: the Russian civil format (contracts.events.PLATE_FORMAT).",
        examples=[r"^[ABEKMHOPCTYX]\d{3}[ABEKMHOPCTYX]{2}\d{2,3}$"],
    )

    region: str | None = Field(
        None,
        pattern=REGION_CODE,
        description="What the camera sees: `ru`, `eu`, a country code (`us`, `gb`, `de`, "
        "`br`, `ar`...) or `auto`, one of the regions of contracts/plate_formats: the recognizer(s) "
        f"that read its plates and the plate formats they are read through. null: `{DEFAULT_REGION}`, "
        "the Russian recognizer alone.",
        examples=["us", "auto"],
    )

    detector_scales: (
        tuple[Annotated[float, Field(gt=0, le=MAX_DETECTOR_SCALE, allow_inf_nan=False)], ...] | None
    ) = Field(
        None,
        min_length=1,
        max_length=MAX_DETECTOR_SCALES,
        description="The fractions of 640 pixels the plate detector sees the frame's long side at "
        "(each a detector run: CPU grows with their squares); null: Triton's default, 1.0 and 0.5. "
        "Above 1.0 for dash cameras' small, distant plates: [1.0, 0.5, 3.0] found 37 of 37 "
        "Romanian plates against 29, at 5.5x the detector's CPU per frame.",
        examples=[[1.0, 0.5, 3.0]],
    )

    site: CameraSite | None = Field(
        None, description="The site whose entry or exit the camera watches (visits); null: none."
    )

    @field_validator("region")
    @classmethod
    def _known_region(cls, value: str | None, info: ValidationInfo) -> str | None:
        keep_unknown = bool(info.context and info.context.get(KEEP_UNKNOWN_REGION))
        if value is not None and not keep_unknown and value not in known_regions():
            raise ValueError(f"unknown region: one of {', '.join(sorted(known_regions()))}")
        return value

    @field_validator("plate_format")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a regular expression: {error}") from None
        return value

    @field_validator("zones")
    @classmethod
    def _unique_names(cls, zones: tuple[Zone, ...]) -> tuple[Zone, ...]:
        seen: dict[str, int] = {}
        for index, zone in enumerate(zones):
            if zone.name in seen:
                raise ValueError(f"zones[{seen[zone.name]}] and zones[{index}] are both named {zone.name!r}")
            seen[zone.name] = index
        return zones

    @property
    def is_default(self) -> bool:
        """Whether these settings change nothing (the camera behaves as without settings)."""
        return (
            not self.masks
            and not self.zones
            and self.min_plate_width is None
            and not self.plate_images
            and self.source is None
            and self.motion is None
            and self.plate_format is None
            and self.region is None
            and self.detector_scales is None
            and self.site is None
        )

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


class CameraSettingsError(ValueError):
    """Settings refused; `problems` names each one, `field: message`."""

    def __init__(self, problems: list[str], source: str = "settings") -> None:
        self.problems = problems
        super().__init__(f"{source} refused: " + "; ".join(problems))


def parse_settings(data: Any, source: str = "settings", keep_unknown_region: bool = False) -> CameraSettings:
    """Settings from decoded JSON/YAML; CameraSettingsError naming every problem. `keep_unknown_region`:
    a well-formed region this version does not know is kept, not refused (what the services reading
    the `cameras` topic do: its other settings still apply, and each service says what it does with
    the region, cameras/regions.py); people setting a camera get the refusal."""
    if not isinstance(data, dict):
        raise CameraSettingsError([f"must be a mapping of settings, not {type(data).__name__}"], source)
    try:
        return CameraSettings.model_validate(data, context={KEEP_UNKNOWN_REGION: keep_unknown_region})
    except ValidationError as error:
        raise CameraSettingsError(settings_problems(error, data), source) from error


DEFAULT_SCALES_WORD = "default"  # typed for a camera's detector scales: back to Triton's default


def parse_detector_scales(text: str) -> tuple[float, ...] | None:
    """A camera's detector scales as people type them (`1.0,0.5,3.0`: the CLI's flag, the console's
    field), checked by this contract's own field; `default` or nothing: None, Triton's default.
    ValueError saying what is wrong and what is wanted."""
    text = text.strip()
    if text.lower() in ("", DEFAULT_SCALES_WORD):
        return None
    wanted = (
        f"1 to {MAX_DETECTOR_SCALES} comma-separated numbers in (0, {MAX_DETECTOR_SCALE:g}], "
        f"or {DEFAULT_SCALES_WORD}"
    )
    scales = []
    for part in text.split(","):
        try:
            scales.append(float(part))
        except ValueError:
            raise ValueError(f"{text!r}: {part.strip()!r} is not a number; {wanted}") from None
    try:
        return parse_settings({"detector_scales": scales}).detector_scales
    except CameraSettingsError as error:
        raise ValueError(f"{text!r}: {'; '.join(error.problems)}; {wanted}") from None


def detector_scales_text(scales: tuple[float, ...]) -> str:
    """The scales as `parse_detector_scales` takes them back: `1.0,0.5,3.0`."""
    return ",".join(str(scale) for scale in scales)


def settings_problems(error: ValidationError, data: Any = None) -> list[str]:
    """One line per problem, its place spelled for people: `masks[1] point 3 x: ...`."""
    problems = []
    items = error.errors(include_url=False)
    for item in items:
        loc = item["loc"]
        if item["type"] == "too_short" and any(
            other["loc"][: len(loc)] == loc != other["loc"] for other in items
        ):
            continue  # pydantic counts only the valid items: the bad one inside is the problem
        message = item["msg"].removeprefix("Value error, ")
        where = _where(item["loc"], data)
        secret = "url" in item["loc"]  # a source URL may hold a password typed in clear: never echo it
        if item["type"] not in ("missing", "extra_forbidden") and not secret and _shown(item.get("input")):
            message += f" (got {_short(item['input'])})"
        problems.append(f"{where}: {message}" if where else message)
    return problems


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    parts: list[str] = []
    rest = list(loc)
    if rest and rest[0] in ("masks", "zones") and len(rest) > 1 and isinstance(rest[1], int):
        field, index = rest[0], rest[1]
        rest = rest[2:]
        label = f"{field}[{index}]"
        if field == "zones":
            name = _zone_name(data, index)
            if name is not None:
                label += f" ({name!r})"
            if rest and rest[0] == "polygon":
                label += " polygon"
                rest = rest[1:]
        parts.append(label)
        if rest and isinstance(rest[0], int):
            parts.append(f"point {rest[0]}")
            rest = rest[1:]
            if rest and rest[0] in (0, 1):
                parts.append("xy"[int(rest[0])])
                rest = rest[1:]
    elif rest[:1] == ["detector_scales"] and len(rest) > 1 and isinstance(rest[1], int):
        parts.append(f"detector_scales[{rest[1]}]")  # as the file writes it, as masks[1] is
        rest = rest[2:]
    parts += [str(part) for part in rest]
    return " ".join(parts)


def _zone_name(data: Any, index: int) -> str | None:
    try:
        name = data["zones"][index]["name"]
    except (KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) else None


def _shown(value: object) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
