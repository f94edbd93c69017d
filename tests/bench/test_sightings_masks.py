"""`bench sightings --masks` without servers: the region kept around a pass's plates, the mask
bands around it (valid settings that mask exactly the outside), a camera per pass, and the count of
sightings from outside the kept region."""

from __future__ import annotations

import numpy as np
import pytest

from bench.masks import inside, kept_region, mask_polygons, pass_region, pass_settings
from bench.passes import make_pass
from bench.sightings import parser, plan
from bench.sightings_score import Outputs, score
from stream_worker.contracts import Direction
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.worker.camera_rules import CameraRules
from tests.model_repository.conftest import load_model_file

WIDTH, HEIGHT = 640, 480
PLATE_BOX = (300.0, 200.0, 400.0, 230.0)
MASKS = load_model_file("plate_recognition", "masks")  # what Triton applies


def masked(settings: CameraSettings, boxes: list[tuple[float, float, float, float]]) -> list[bool]:
    """Which boxes of a WIDTH x HEIGHT frame the camera's masks drop, as the worker sends them and
    plate_recognition applies them."""
    polygons = MASKS.parse_masks(CameraRules({"cam": settings}.get).plate_masks("cam"))
    return MASKS.masked_plates(np.array(boxes, np.float32).reshape(-1, 4), polygons, WIDTH, HEIGHT).tolist()


def test_the_kept_region_is_the_plates_track_grown_by_half_the_largest_plate_and_clipped():
    boxes = [(100.0, 100.0, 200.0, 120.0), (150.0, 140.0, 290.0, 170.0), (600.0, 10.0, 630.0, 20.0)]
    assert kept_region(boxes, WIDTH, HEIGHT) == (30.0, 0.0, 640.0, 185.0)  # grown by 140/2 and 30/2, clipped
    assert kept_region([], WIDTH, HEIGHT) is None
    assert kept_region([(10.0, 10.0, 20.0, 20.0)], WIDTH, HEIGHT, margin=0) == (10.0, 10.0, 20.0, 20.0)


def test_four_bands_mask_everything_outside_the_region_and_nothing_inside():
    region = (160.0, 120.0, 480.0, 360.0)
    polygons = mask_polygons(region, WIDTH, HEIGHT)
    assert len(polygons) == 4
    settings = CameraSettings.model_validate({"masks": [[list(p) for p in poly] for poly in polygons]})
    boxes = [(x - 4.0, y - 2.0, x + 4.0, y + 2.0) for x in range(5, WIDTH, 10) for y in range(5, HEIGHT, 10)]
    for box, dropped in zip(boxes, masked(settings, boxes), strict=True):
        assert dropped is not inside(region, box), box


def test_bands_at_the_frame_edges_are_left_out():
    assert mask_polygons((0.0, 0.0, WIDTH, HEIGHT), WIDTH, HEIGHT) == []
    only_below = mask_polygons((0.0, 0.0, WIDTH, 240.0), WIDTH, HEIGHT)
    assert only_below == [((0.0, 0.5), (1.0, 0.5), (1.0, 1.0), (0.0, 1.0))]
    assert len(mask_polygons((0.0, 100.0, 320.0, HEIGHT), WIDTH, HEIGHT)) == 2  # above, right


@pytest.fixture(scope="module")
def scenes():
    photo = np.full((HEIGHT, WIDTH, 3), 90, dtype=np.uint8)
    return [
        make_pass(photo, f"{n}.jpg", ["A123BC77"], [PLATE_BOX], kind, 4, n)
        for n, kind in enumerate((Direction.APPROACHING, Direction.RIGHT))
    ]


def test_a_pass_keeps_every_frame_of_its_plate_and_masks_the_rest(scenes):
    for scene in scenes:
        region = pass_region(scene)
        assert region is not None and scene.size == (WIDTH, HEIGHT)
        settings = pass_settings(scene)
        assert 1 <= len(settings.masks) <= 4
        assert not any(masked(settings, [box for frame in scene.frames for box in frame.boxes]))
        assert masked(settings, [(0.0, 0.0, 20.0, 10.0), (600.0, 460.0, 640.0, 470.0)]) == [True, True]


def test_sightings_from_outside_the_kept_region_are_counted(scenes):
    planned = plan(scenes, cameras=len(scenes), fps=10.0, start_ms=0)
    assert [p.camera_id for p in planned] == ["cam-0", "cam-1"]
    a, b = planned

    def sighting(text: str, item, k: int, box) -> dict:
        return {
            "sighting_id": f"{text}-{k}",
            "text": text,
            "format_valid": True,
            "reads": 3,
            "confidence": 0.9,
            "direction": item.scene.kind.value,
            "best_read": {
                "frame_id": item.frame_ids[k],
                "box": dict(zip(("x1", "y1", "x2", "y2"), box, strict=True)),
            },
        }

    outputs = Outputs()
    outputs.sightings = [
        sighting("A123BC77", a, 1, a.scene.frames[1].boxes[0]),
        sighting("JUNK", b, 2, (5.0, 5.0, 40.0, 15.0)),  # far from b's plate: outside, and extra
    ]
    s = score(planned, outputs)["sightings"]
    assert (s["outside_kept"], s["outside_kept_texts"], s["extra"]) == (1, ["JUNK"], 1)
    assert (s["exact"], s["without_exact"], s["missed"]) == (1, 1, 1)


def test_masks_is_off_by_default():
    assert parser().parse_args([]).masks is False
    assert parser().parse_args(["--masks"]).masks is True
