"""What a camera's settings ask of Triton (pictures, masks), which plates they keep, and their
zones (pure logic; the masks' geometry itself: tests/model_repository/test_masks.py)."""

from __future__ import annotations

from dataclasses import replace

import orjson

from stream_worker.contracts.cameras import CameraSettings
from stream_worker.recognition import FrameResult, Plate
from stream_worker.worker.camera_rules import CameraRules

LEFT_HALF = [[0.0, 0.0], [0.5, 0.0], [0.5, 1.0], [0.0, 1.0]]
RIGHT_HALF = [[0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.5, 1.0]]


def plate(x1: float, y1: float, x2: float, y2: float, text: str = "A123BC77") -> Plate:
    return Plate(text=text, confidence=0.9, box=(x1, y1, x2, y2), detection_score=0.8)


def frame(*plates: Plate, width: int = 1000, height: int = 500) -> FrameResult:
    return FrameResult("ok", width, height, tuple(plates))


def rules_for(settings: dict[str, CameraSettings]) -> CameraRules:
    return CameraRules(settings.get)


def test_a_camera_without_settings_keeps_every_plate_without_a_zone() -> None:
    plates = (plate(10, 10, 110, 40), plate(800, 10, 900, 40))
    kept = rules_for({}).apply("cam", frame(*plates))
    assert kept.plates == [(plates[0], None), (plates[1], None)]
    assert (kept.masked, kept.too_narrow) == (0, 0)
    assert not rules_for({}).plate_images("cam")


def test_the_masks_go_to_triton_as_json_polygons_per_camera() -> None:
    rules = rules_for({"cam": CameraSettings(masks=(LEFT_HALF, RIGHT_HALF))})
    assert orjson.loads(rules.plate_masks("cam")) == [LEFT_HALF, RIGHT_HALF]
    assert rules.plate_masks("other") == b""  # no settings: no input at all
    assert rules_for({"cam": CameraSettings(plate_images=True)}).plate_masks("cam") == b""


def test_the_plates_triton_masked_are_counted_and_the_rest_kept() -> None:
    right = plate(600, 100, 700, 130)
    rules = rules_for({"cam": CameraSettings(masks=(LEFT_HALF,))})
    kept = rules.apply("cam", replace(frame(right), masked=2))
    assert kept.plates == [(right, None)]
    assert kept.masked == 2
    assert rules.apply("cam", replace(frame(), masked=1)).masked == 1  # every plate was masked


def test_each_plate_gets_the_first_zone_holding_its_centre() -> None:
    settings = CameraSettings.model_validate(
        {
            "zones": [
                {"name": "lane-1", "polygon": LEFT_HALF},
                {"name": "lane-2", "polygon": RIGHT_HALF},
                {"name": "everything", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]]},
            ]
        }
    )
    left, right = plate(100, 100, 200, 130), plate(600, 100, 700, 130)
    kept = rules_for({"cam": settings}).apply("cam", frame(left, right))
    assert kept.plates == [(left, "lane-1"), (right, "lane-2")]


def test_a_plate_outside_every_zone_has_none() -> None:
    settings = CameraSettings.model_validate({"zones": [{"name": "gate", "polygon": LEFT_HALF}]})
    right = plate(600, 100, 700, 130)
    assert rules_for({"cam": settings}).apply("cam", frame(right)).plates == [(right, None)]


def test_plates_narrower_than_the_minimum_are_dropped_and_counted_apart_from_masked_ones() -> None:
    narrow, wide = plate(600, 10, 640, 30), plate(600, 100, 760, 140)
    settings = CameraSettings(masks=(LEFT_HALF,), min_plate_width=50)
    kept = rules_for({"cam": settings}).apply("cam", replace(frame(narrow, wide), masked=1))
    assert kept.plates == [(wide, None)]
    assert (kept.masked, kept.too_narrow) == (1, 1)


def test_a_change_of_settings_applies_to_the_next_frame() -> None:
    lane = CameraSettings.model_validate({"zones": [{"name": "lane", "polygon": LEFT_HALF}]})
    current: dict[str, CameraSettings] = {"cam": CameraSettings(masks=(LEFT_HALF,))}
    rules = rules_for(current)
    left = plate(100, 100, 200, 130)
    assert orjson.loads(rules.plate_masks("cam")) == [LEFT_HALF]
    current["cam"] = lane
    assert rules.plate_masks("cam") == b""
    assert rules.apply("cam", frame(left)).plates == [(left, "lane")]
    del current["cam"]  # tombstone: back to defaults
    assert rules.apply("cam", frame(left)).plates == [(left, None)]


def test_geometry_is_reused_while_the_settings_stay_and_the_cache_is_bounded() -> None:
    zone = {"zones": [{"name": "lane", "polygon": LEFT_HALF}]}
    settings = {f"cam-{i}": CameraSettings.model_validate(zone) for i in range(5)}
    rules = CameraRules(settings.get, cache_size=3)
    first = rules.geometry("cam-0", 1000, 500)
    assert rules.geometry("cam-0", 1000, 500) is first
    assert rules.geometry("cam-0", 1920, 1080) is not first
    for i in range(5):
        rules.geometry(f"cam-{i}", 1000, 500)
    assert len(rules._geometries) == 3


def test_plate_pictures_follow_the_cameras_setting() -> None:
    rules = rules_for({"cam": CameraSettings(plate_images=True)})
    assert rules.plate_images("cam")
    assert not rules.plate_images("other")
    # plate pictures alone, or masks alone (Triton's), leave the worker nothing to check per plate
    assert rules.geometry("cam", 1000, 500) is None
    assert rules_for({"cam": CameraSettings(masks=(LEFT_HALF,))}).geometry("cam", 1000, 500) is None


def test_a_frame_without_plates_costs_no_lookup() -> None:
    calls: list[str] = []

    def settings_of(camera: str) -> CameraSettings | None:
        calls.append(camera)
        return None

    assert CameraRules(settings_of).apply("cam", frame()).plates == []
    assert calls == []


def test_a_cameras_detector_scales_go_to_triton_and_none_means_the_default() -> None:
    rules = rules_for({"dash": CameraSettings(detector_scales=(1.0, 0.5, 3.0)), "gate": CameraSettings()})
    assert rules.detector_scales("dash") == (1.0, 0.5, 3.0)
    assert rules.detector_scales("gate") == rules.detector_scales("unknown") == ()
