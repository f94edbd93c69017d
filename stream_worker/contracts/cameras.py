"""The camera-settings contract: one `CameraSettings` per camera on the compacted topic `cameras`.

Polygons are in coordinates normalised to the frame ([0, 0] top left, [1, 1] bottom right), so
one file fits every resolution a camera sends. A camera without settings (no record, or its
tombstone) has `CameraSettings()`: no masks, no zones, no minimum width, no plate pictures, which
is what the worker did before cameras had settings. Bad settings are refused whole, each problem
named by where it is (`masks[1] point 3 x`, `zones[0] ('gate') polygon`), see `settings_problems`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from stream_worker.contracts.polygons import polygon_problem

MAX_POINTS = 64  # per polygon: a plate is tested against every edge of every mask and zone
MAX_POLYGONS = 32  # masks, and zones, per camera
MAX_NAME_LENGTH = 64
MAX_DISPLAY_NAME_LENGTH = 200

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


class CameraSettings(BaseModel):
    """One camera's settings (value of a `cameras` record; key = the camera id), JSON-encoded."""

    model_config = ConfigDict(title="CameraSettings", extra="forbid", frozen=True)

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
        return not self.masks and not self.zones and self.min_plate_width is None and not self.plate_images

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


class CameraSettingsError(ValueError):
    """Settings refused; `problems` names each one, `field: message`."""

    def __init__(self, problems: list[str], source: str = "settings") -> None:
        self.problems = problems
        super().__init__(f"{source} refused: " + "; ".join(problems))


def parse_settings(data: Any, source: str = "settings") -> CameraSettings:
    """Settings from decoded JSON/YAML; CameraSettingsError naming every problem."""
    if not isinstance(data, dict):
        raise CameraSettingsError([f"must be a mapping of settings, not {type(data).__name__}"], source)
    try:
        return CameraSettings.model_validate(data)
    except ValidationError as error:
        raise CameraSettingsError(settings_problems(error, data), source) from error


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
        if item["type"] not in ("missing", "extra_forbidden") and _shown(item.get("input")):
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
