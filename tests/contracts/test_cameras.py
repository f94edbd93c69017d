"""The camera-settings contract: what it accepts, what it refuses and how it names the problem."""

from __future__ import annotations

import jsonschema
import orjson
import pytest

from stream_worker.contracts import SCHEMA_MODELS, SCHEMAS_DIR
from stream_worker.contracts.cameras import (
    MAX_POINTS,
    MAX_POLYGONS,
    CameraSettings,
    CameraSettingsError,
    parse_settings,
)

SQUARE = [[0.1, 0.1], [0.4, 0.1], [0.4, 0.4], [0.1, 0.4]]
FULL = {
    "display_name": "Gate 1, entry lane",
    "masks": [SQUARE],
    "zones": [{"name": "lane-1", "polygon": [[0.5, 0.5], [1, 0.5], [1, 1], [0.5, 1]]}],
    "min_plate_width": 40,
    "plate_images": True,
}


def problems(data) -> list[str]:
    with pytest.raises(CameraSettingsError) as caught:
        parse_settings(data)
    return caught.value.problems


def test_defaults_change_nothing():
    settings = parse_settings({})
    assert settings == CameraSettings()
    assert settings.is_default
    assert (settings.masks, settings.zones, settings.min_plate_width, settings.plate_images) == (
        (),
        (),
        None,
        False,
    )


def test_full_settings_round_trip_through_json():
    settings = parse_settings(FULL)
    assert not settings.is_default
    assert settings.masks[0][2] == (0.4, 0.4)
    assert settings.zones[0].name == "lane-1"
    again = CameraSettings.model_validate_json(settings.to_json())
    assert again == settings
    assert orjson.loads(settings.to_json())["masks"] == [SQUARE]


@pytest.mark.parametrize(
    "fields", [{"plate_images": True}, {"min_plate_width": 1}, {"masks": [SQUARE]}, {"zones": FULL["zones"]}]
)
def test_any_one_setting_is_not_default(fields):
    assert not parse_settings(fields).is_default


def test_display_name_alone_is_still_default_behaviour():
    assert parse_settings({"display_name": "Gate"}).is_default


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        (
            {"masks": [[[0, 0], [1.5, 0], [1, 1]]]},
            "masks[0] point 1 x: Input should be less than or equal to 1 (got 1.5)",
        ),
        (
            {"masks": [SQUARE, [[0, 0], [1, 0], [1, -0.1]]]},
            "masks[1] point 2 y: Input should be greater than or equal to 0 (got -0.1)",
        ),
        (
            {"masks": [[[0, 0], [1, 0], ["0.5", 1]]]},
            "masks[0] point 2 x: Input should be a valid number (got '0.5')",
        ),
        (
            {"masks": [[[0, 0], [1, 0]]]},
            "masks[0]: Tuple should have at least 3 items after validation, not 2",
        ),
        ({"masks": [[[0, 0], [1, 0, 0], [1, 1]]]}, "masks[0] point 1: Tuple should have at most 2 items"),
        (
            {"masks": [[[0, 0], [1, 0], [0, 1], [1, 1]]]},
            "masks[0]: not a simple polygon: edge 1 (point 1 to 2) crosses or touches edge 3 (point 3 to 0)",
        ),
        ({"masks": [[[0, 0], [0.5, 0.5], [1, 1]]]}, "masks[0]: not a simple polygon: has no area"),
        (
            {"zones": [{"name": "gate", "polygon": [[0, 0], [1, 0], [0, 1], [1, 1]]}]},
            "zones[0] ('gate') polygon: not a simple polygon: edge 1",
        ),
        (
            {"zones": [{"name": "gate", "polygon": [[0, 0], [1, 0], [1, 2]]}]},
            "zones[0] ('gate') polygon point 2 y: Input should be less than or equal to 1 (got 2)",
        ),
        (
            {"zones": [{"name": "", "polygon": SQUARE}]},
            "zones[0] ('') name: String should have at least 1 character",
        ),
        (
            {"zones": [{"name": " gate", "polygon": SQUARE}]},
            "zones[0] (' gate') name: must have no leading/trailing",
        ),
        ({"zones": [{"polygon": SQUARE}]}, "zones[0] name: Field required"),
        ({"zones": [{"name": "a", "polygon": SQUARE, "colour": 1}]}, "zones[0] ('a') colour: Extra inputs"),
        (
            {
                "zones": [
                    {"name": "a", "polygon": SQUARE},
                    {"name": "b", "polygon": SQUARE},
                    {"name": "a", "polygon": SQUARE},
                ]
            },
            "zones: zones[0] and zones[2] are both named 'a'",
        ),
        ({"min_plate_width": 0}, "min_plate_width: Input should be greater than or equal to 1 (got 0)"),
        ({"min_plate_width": 12.5}, "min_plate_width: Input should be a valid integer"),
        ({"min_plate_width": "12"}, "min_plate_width: Input should be a valid integer (got '12')"),
        ({"plate_images": "yes"}, "plate_images: Input should be a valid boolean (got 'yes')"),
        ({"plate_images": 1}, "plate_images: Input should be a valid boolean"),
        ({"schema_version": 2}, "schema_version: Input should be 1"),
        ({"display_name": "x" * 201}, "display_name: String should have at most 200 characters"),
        ({"masks": [SQUARE] * (MAX_POLYGONS + 1)}, f"masks: Tuple should have at most {MAX_POLYGONS} items"),
        (
            {"masks": [[[0.5 + 0.4 * (k % 2), k / MAX_POINTS] for k in range(MAX_POINTS + 1)]]},
            f"masks[0]: Tuple should have at most {MAX_POINTS} items",
        ),
    ],
)
def test_bad_settings_are_refused_with_a_message_saying_where(data, expected):
    found = problems(data)
    assert any(expected in problem for problem in found), found


def test_every_problem_is_reported_at_once():
    found = problems({"masks": [[[0, 0], [2, 0], [1, 1]]], "min_plate_width": 0, "extra": 1})
    assert len(found) == 3, found


def test_a_point_out_of_range_is_not_also_reported_as_too_few_points():
    assert problems({"masks": [[[0, 0], [1, 0], [1, 1.5]]]}) == [
        "masks[0] point 2 y: Input should be less than or equal to 1 (got 1.5)"
    ]


def test_not_a_mapping():
    assert problems([1, 2]) == ["must be a mapping of settings, not list"]
    assert problems(None) == ["must be a mapping of settings, not NoneType"]


def test_the_error_message_names_its_source():
    with pytest.raises(CameraSettingsError, match=r"^gate\.yaml refused: min_plate_width"):
        parse_settings({"min_plate_width": -1}, "gate.yaml")


def test_settings_are_immutable():
    settings = parse_settings(FULL)
    with pytest.raises(ValueError, match="frozen"):
        settings.plate_images = False  # type: ignore[misc]


def test_the_checked_in_schema_is_generated_from_the_model():
    assert SCHEMA_MODELS["camera_settings.schema.json"] is CameraSettings
    schema = orjson.loads((SCHEMAS_DIR / "camera_settings.schema.json").read_bytes())
    assert schema["title"] == "CameraSettings" and schema["additionalProperties"] is False


def test_the_schema_agrees_with_the_model_on_ranges_and_unknown_keys():
    schema = orjson.loads((SCHEMAS_DIR / "camera_settings.schema.json").read_bytes())
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors(orjson.loads(parse_settings(FULL).to_json())))
    for bad in (
        {"colour": 1},
        {"masks": [[[0, 0], [1.5, 0], [1, 1]]]},
        {"masks": [[[0, 0], [1, 0]]]},
        {"zones": [{"name": "", "polygon": SQUARE}]},
        {"min_plate_width": 0},
        {"plate_images": "yes"},
    ):
        assert list(validator.iter_errors(bad)), bad
        with pytest.raises(CameraSettingsError):
            parse_settings(bad)


def test_a_region_is_kept_and_left_out_when_absent():
    assert parse_settings({"region": "us"}).region == "us"
    assert not parse_settings({"region": "us"}).is_default
    # Without a region (the default, `ru`) the settings' JSON has no region field.
    assert "region" not in orjson.loads(parse_settings(FULL).to_json())
    assert orjson.loads(parse_settings({"region": "auto"}).to_json()) == {
        **orjson.loads(CameraSettings().to_json()),
        "region": "auto",
    }


@pytest.mark.parametrize("code", ["xx", "zz-top", "US", "", 7])
def test_an_unknown_or_malformed_region_is_refused_by_name(code):
    (problem,) = problems({"region": code})
    assert problem.startswith("region: ")


def test_a_well_formed_unknown_region_is_kept_when_asked():
    """What the followers of the cameras topic read: a region written by a newer version is kept (the
    services decide what to do with it) instead of the camera losing all of its settings."""
    settings = parse_settings({"region": "xx", "plate_images": True}, keep_unknown_region=True)
    assert (settings.region, settings.plate_images) == ("xx", True)
    with pytest.raises(CameraSettingsError):
        parse_settings({"region": "Not a code"}, keep_unknown_region=True)


def test_detector_scales_are_kept_bounded_and_left_out_when_absent():
    settings = parse_settings({"detector_scales": [1.0, 0.5, 3.0]})
    assert settings.detector_scales == (1.0, 0.5, 3.0) and not settings.is_default
    assert "detector_scales" not in orjson.loads(parse_settings(FULL).to_json())
    for bad in ([], [1.0, 0.5, 2.0, 3.0, 4.0], [0], [4.5], ["big"], [float("nan")]):
        (problem,) = problems({"detector_scales": bad})
        assert problem.startswith("detector_scales"), problem


def test_a_site_is_kept_and_left_out_when_absent():
    settings = parse_settings({"site": {"name": "depot", "role": "entry", "overstay_s": 3600}})
    assert settings.site is not None and settings.site.role == "entry" and settings.site.overstay_s == 3600
    assert not settings.is_default
    assert "site" not in orjson.loads(parse_settings(FULL).to_json())
    assert orjson.loads(parse_settings({"site": {"name": "depot", "role": "exit"}}).to_json()) == {
        **orjson.loads(CameraSettings().to_json()),
        "site": {"name": "depot", "role": "exit"},
    }


@pytest.mark.parametrize(
    ("site", "where"),
    [
        ({"name": "depot", "role": "gate"}, "site role"),
        ({"name": "Depot 1", "role": "entry"}, "site name"),
        ({"role": "entry"}, "site name"),
        ({"name": "depot", "role": "entry", "overstay_s": 0}, "site overstay_s"),
        ({"name": "depot", "role": "entry", "speed": 3}, "site speed"),
    ],
)
def test_a_bad_site_is_refused_by_name(site, where):
    (problem,) = problems({"site": site})
    assert problem.startswith(f"{where}: ")
