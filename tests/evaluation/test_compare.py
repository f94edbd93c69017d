"""A run against an earlier report, plate by plate: worse and better texts and boxes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stream_worker.evaluation.compare import compare, comparison_lines, load_images
from stream_worker.evaluation.labels import ImageLabel, LabelsError
from stream_worker.evaluation.scoring import Prediction, score_image

PLATE = (100.0, 100.0, 200.0, 140.0)
OTHER = (300.0, 100.0, 400.0, 140.0)
LABEL = ImageLabel(plates=["A123BC77", None], boxes=[PLATE, OTHER])


def row(file: str, *predictions: Prediction) -> object:
    return score_image(file, LABEL, "ok", list(predictions))


def test_a_text_lost_a_box_found_and_unchanged_plates() -> None:
    before = [row("a.jpg", Prediction(text="A123BC77", box=PLATE)), row("b.jpg"), row("gone.jpg")]
    now = [
        row("a.jpg", Prediction(text="A123BC7", box=PLATE)),  # text worse, box still found
        row("b.jpg", Prediction(text="X", box=OTHER)),  # the unlabelled-text plate's box now found
        row("new.jpg"),
    ]
    result = compare(before, now)  # type: ignore[arg-type]
    assert [(c.file, c.plate, c.what, c.before, c.now) for c in result.worse] == [
        ("a.jpg", 0, "text", "A123BC77", "A123BC7")
    ]
    assert [(c.file, c.plate, c.what) for c in result.better] == [("b.jpg", 1, "box")]
    assert (result.plates_compared, result.images_only_before, result.images_only_now) == (4, 1, 1)
    lines = comparison_lines(result, Path("old.json"))
    assert (
        lines[0]
        == "against old.json: 4 plates compared, 1 worse, 1 better (1 images only there, 1 only here)"
    )
    assert lines[1] == "  worse: a.jpg plate 0 (text A123BC77): A123BC77 -> A123BC7"
    assert lines[2] == "  better: b.jpg plate 1 (box): - -> X"


def test_reports_from_before_regions_load(tmp_path: Path) -> None:
    old_row = {
        "file": "a.jpg",
        "status": "ok",
        "matched_by": "box",
        "labelled": 1,
        "found": 1,
        "texts_labelled": 1,
        "texts_exact": 1,
        "texts_within_one": 1,
        "char_errors": 0,
        "char_total": 8,
        "other_boxes": 0,
        "plates": [{"expected": "A123BC77", "read": "A123BC77", "iou": 0.9}],
        "other_texts": [],
    }
    path = tmp_path / "old.json"
    path.write_bytes(orjson.dumps({"images": [old_row]}))
    (loaded,) = load_images(path)
    assert (loaded.file, loaded.plates[0].read, loaded.country) == ("a.jpg", "A123BC77", None)
    path.write_bytes(b"{}")
    with pytest.raises(LabelsError, match="is not a report of `stream-worker eval --report`"):
        load_images(path)
