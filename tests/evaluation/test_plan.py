"""The plan of an eval run: layout, items and region are settled before any server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.contracts.plate_formats import UnknownRegionError
from stream_worker.evaluation.layouts import Layout
from stream_worker.evaluation.plan import default_region, plan_eval
from stream_worker.evaluation.scoring import Prediction
from stream_worker.evaluation.settings import EvalSettings

BOX = (0.0, 0.0, 10.0, 10.0)


@pytest.mark.parametrize(
    ("layout", "country", "region"),
    [
        (Layout.PHOTOS, None, "ru"),
        (Layout.PHOTOS, "us", "ru"),  # a labels.json folder reads as a camera without a region
        (Layout.CROPS, "us", "us"),
        (Layout.CROPS, "ar", "ar"),
        (Layout.CROPS, None, "auto"),
        (Layout.VOC, "ro", "ro"),
        (Layout.CROPS, "zz", "auto"),  # not a region the book knows
    ],
)
def test_default_region(layout: Layout, country: str | None, region: str) -> None:
    assert default_region(layout, country) == region


def test_a_crops_folder_reads_for_its_country_and_scores_each_crop(tmp_path: Path) -> None:
    folder = tmp_path / "us-crops"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"")
    (folder / "labels.csv").write_text("file,state,plate\na.png,ca,7ABC123\n")
    plan = plan_eval(EvalSettings(folder=folder))
    assert (plan.layout, plan.region.code, [item.file for item in plan.items]) == (
        Layout.CROPS,
        "us",
        ["a.png"],
    )
    score = plan.items[0].score("ok", [Prediction(text="7ABC123", box=BOX)])
    assert (score.matched_by, score.country, score.texts_exact) == ("crop", "us", 1)


def test_region_flag_wins_and_an_unknown_one_fails_first(tmp_path: Path) -> None:
    folder = tmp_path / "ro-scenes"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"")
    (folder / "a.xml").write_text("<annotation></annotation>")
    assert plan_eval(EvalSettings(folder=folder, region="auto")).region.code == "auto"
    assert plan_eval(EvalSettings(folder=folder)).items[0].score("ok", []).country == "ro"
    with pytest.raises(UnknownRegionError, match="xx"):
        plan_eval(EvalSettings(folder=folder, region="xx"))
