"""The sightings benchmark's own logic, without servers: passes made from a photo, their plan on
the cameras' clocks, and how frames and sightings are scored against the labels."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from bench.passes import KINDS, make_pass
from bench.sightings import PASS_GAP_S, plan, records
from bench.sightings_score import Outputs, score
from stream_worker.contracts import Direction

PLATE_BOX = (300.0, 200.0, 400.0, 230.0)


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    image = np.full((480, 640, 3), 90, dtype=np.uint8)
    cv2.rectangle(image, (300, 200), (400, 230), (255, 255, 255), -1)
    cv2.putText(image, "A123BC77", (305, 224), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 2)
    return image


def white_box(jpeg: bytes) -> tuple[float, float, float, float]:
    """Where the bright plate lies in a decoded frame."""
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_GRAYSCALE)
    ys, xs = np.nonzero(image > 200)
    return float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())


@pytest.mark.parametrize("kind", KINDS)
def test_a_pass_moves_the_plate_as_its_kind_says_and_the_boxes_follow(photo, kind):
    scene = make_pass(photo, "p.jpg", ["A123BC77"], [PLATE_BOX], kind, frames=6, seed=1)
    assert len(scene.frames) == 6 and scene.texts == ["A123BC77"] and scene.kind is kind
    widths = [f.boxes[0][2] - f.boxes[0][0] for f in scene.frames]
    centres = [(f.boxes[0][0] + f.boxes[0][2]) / 2 for f in scene.frames]
    if kind is Direction.APPROACHING:
        assert widths[-1] / widths[0] > 1.3
    elif kind is Direction.RECEDING:
        assert widths[0] / widths[-1] > 1.3
    else:
        shift = (centres[-1] - centres[0]) / widths[0]
        assert (shift > 1.2) if kind is Direction.RIGHT else (shift < -1.2)
    for frame in scene.frames:  # the carried box is where the plate really is (JPEG edges aside)
        assert np.allclose(white_box(frame.jpeg), frame.boxes[0], atol=3)


def test_frames_differ_by_noise_and_quality_but_a_seed_repeats_them(photo):
    one = make_pass(photo, "p.jpg", ["A"], [PLATE_BOX], Direction.LEFT, frames=3, seed=7)
    again = make_pass(photo, "p.jpg", ["A"], [PLATE_BOX], Direction.LEFT, frames=3, seed=7)
    other = make_pass(photo, "p.jpg", ["A"], [PLATE_BOX], Direction.LEFT, frames=3, seed=8)
    assert [f.jpeg for f in one.frames] == [f.jpeg for f in again.frames]
    assert [f.jpeg for f in one.frames] != [f.jpeg for f in other.frames]
    assert len({f.jpeg for f in one.frames}) == 3


def test_passes_of_a_camera_are_spaced_in_capture_time_and_each_camera_ends_with_a_blank(photo):
    scenes = [make_pass(photo, f"p{n}.jpg", ["A"], [PLATE_BOX], Direction.LEFT, 4, n) for n in range(3)]
    planned = plan(scenes, cameras=2, fps=10.0, start_ms=1_000_000)
    assert [p.camera_id for p in planned] == ["cam-0", "cam-1", "cam-0"]
    assert planned[2].start_ms == 1_000_000 + int((0.4 + PASS_GAP_S) * 1000)
    sent = list(records(planned, fps=10.0))
    assert len(sent) == 12 + 2
    cam0 = [(frame_id, ms) for camera, frame_id, ms, _ in sent if camera == "cam-0"]
    assert [ms for _, ms in cam0] == sorted(ms for _, ms in cam0)
    assert cam0[-1] == ("cam-0#end", planned[2].start_ms + 300 + int(PASS_GAP_S * 1000))


def event(frame_id: str, plates: list[tuple[str, tuple[float, float, float, float]]]) -> dict:
    return {
        "frame_id": frame_id,
        "plates": [
            {"text": t, "box": dict(zip(("x1", "y1", "x2", "y2"), b, strict=True))} for t, b in plates
        ],
    }


def sighting(
    text: str, frame_id: str, box, reads: int = 4, direction: str = "left", sid: str = "", valid: bool = True
) -> dict:
    return {
        "sighting_id": sid or f"{text}-{frame_id}",
        "text": text,
        "format_valid": valid,
        "reads": reads,
        "confidence": 0.9,
        "direction": direction,
        "best_read": {"frame_id": frame_id, "box": dict(zip(("x1", "y1", "x2", "y2"), box, strict=True))},
    }


def test_scoring_counts_frames_and_sightings_against_the_labels(photo):
    scenes = [
        make_pass(photo, "a.jpg", ["A123BC77", None], [PLATE_BOX, (10, 10, 60, 25)], Direction.LEFT, 4, 1),
        make_pass(photo, "b.jpg", ["K456MH199"], [PLATE_BOX], Direction.RIGHT, 4, 2),
    ]
    planned = plan(scenes, cameras=1, fps=10.0, start_ms=0)
    a, b = planned
    outputs = Outputs()
    for item, reads in ((a, ["A123BC77", "A123BC77", "A128BC77", None]), (b, ["K456MH199"] * 4)):
        for frame_id, frame, text in zip(item.frame_ids, item.scene.frames, reads, strict=True):
            outputs.events[frame_id] = event(frame_id, [] if text is None else [(text, frame.boxes[0])])
    outputs.sightings = [
        sighting("A123BC77", a.frame_ids[1], a.scene.frames[1].boxes[0]),
        sighting("XX", a.frame_ids[0], a.scene.frames[0].boxes[1]),  # the unlabelled plate: not extra
        sighting("K456MH19", b.frame_ids[0], b.scene.frames[0].boxes[0], reads=3, direction="right"),
        sighting("K456MH199", b.frame_ids[2], b.scene.frames[2].boxes[0], reads=1, direction="left"),
        sighting("JUNK", b.frame_ids[2], (600, 400, 630, 410)),
    ]
    figures = score(planned, outputs)
    assert figures["frames"] == {"plates": 8, "exact": 2 + 4, "exact_rate": 0.75}
    s = figures["sightings"]
    assert (s["plates"], s["exact"], s["exact_rate"]) == (2, 1, 0.5)  # b: the sighting with most reads
    assert (s["one_sighting"], s["split"], s["missed"], s["extra"], s["extra_texts"]) == (
        1,
        1,
        0,
        1,
        ["JUNK"],
    )
    assert s["direction_right"] == 2
    rows = {row["expected"]: row for row in figures["plates"]}
    assert rows["A123BC77"]["frames_exact"] == 2 and rows["K456MH199"]["sightings"] == 2


def test_publishing_rules_are_scored_as_if_the_service_had_dropped_those_sightings(photo):
    scenes = [
        make_pass(photo, "a.jpg", ["A123BC77"], [PLATE_BOX], Direction.LEFT, 4, 1),
        make_pass(photo, "b.jpg", ["K456MH199"], [PLATE_BOX], Direction.RIGHT, 4, 2),
        make_pass(photo, "c.jpg", ["E777KX77"], [PLATE_BOX], Direction.RIGHT, 4, 3),
    ]
    a, b, c = plan(scenes, cameras=1, fps=10.0, start_ms=0)
    outputs = Outputs()
    outputs.sightings = [
        sighting("A123BC77", a.frame_ids[0], a.scene.frames[0].boxes[0], reads=4),
        # b: a wrong read with more reads, and the right one alone; only the right one is 1 read.
        sighting("K456MH19", b.frame_ids[0], b.scene.frames[0].boxes[0], reads=2, valid=False),
        sighting("K456MH199", b.frame_ids[3], b.scene.frames[3].boxes[0], reads=1),
        sighting("E777KX77", c.frame_ids[0], c.scene.frames[0].boxes[0], reads=1),  # c: one read only
        sighting("JUNK", a.frame_ids[1], (600, 400, 630, 410), reads=1, valid=False),
        sighting("T9640", b.frame_ids[1], (600, 400, 630, 410), reads=2, valid=False),
        sighting("O777OO77", c.frame_ids[1], (600, 400, 630, 410), reads=1, valid=True),
    ]
    rules = score([a, b, c], outputs)["publish_rules"]
    assert rules["every sighting"] == {"exact": 2, "missed": 0, "extra": 3}  # b votes its 2-read sighting
    assert rules["2+ reads"] == {"exact": 1, "missed": 1, "extra": 1}
    assert rules["3+ reads"] == {"exact": 1, "missed": 2, "extra": 0}
    assert rules["2+ reads, or 1 in a valid format"] == {"exact": 2, "missed": 0, "extra": 2}


def test_a_plate_without_a_sighting_or_events_counts_wrong(photo):
    planned = plan([make_pass(photo, "a.jpg", ["A123BC77"], [PLATE_BOX], Direction.LEFT, 3, 1)], 1, 10.0, 0)
    figures = score(planned, Outputs())
    assert figures["frames"]["exact"] == 0 and figures["frames"]["plates"] == 3
    assert figures["sightings"]["missed"] == 1 and figures["sightings"]["exact_rate"] == 0.0
