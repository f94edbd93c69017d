"""The rows, the summary and the JSON report, from hand-made scores."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson

from stream_worker.evaluation.labels import ImageLabel
from stream_worker.evaluation.report import (
    EvalReport,
    country_lines,
    image_row,
    summary_lines,
    table_header,
    write_report,
)
from stream_worker.evaluation.scoring import Prediction, score_crop, score_image, totals, totals_by_country
from stream_worker.evaluation.settings import EvalSettings

PLATE = (100.0, 100.0, 200.0, 140.0)
ELSEWHERE = (600.0, 600.0, 700.0, 640.0)


def test_row_shows_counts_status_and_wrong_reads_with_the_expected_text() -> None:
    score = score_image(
        "dstaroff_ru_000.jpg",
        ImageLabel(plates=["H002EX71", "A123BC77", None], boxes=[PLATE, ELSEWHERE, (0, 0, 10, 10)]),
        "ok",
        [Prediction(text="H002EX7", box=PLATE), Prediction(text="X", box=(300, 300, 400, 340))],
    )
    row = image_row(score)
    assert row.split()[:5] == ["dstaroff_ru_000.jpg", "1/3", "0/2", "1", "ok"]
    assert row.endswith("H002EX7 (H002EX71) - (A123BC77)")
    assert table_header().split()[:5] == ["file", "found", "exact", "other", "status"]


def test_row_of_an_exact_read_shows_the_text_alone_and_a_rejection_its_kind() -> None:
    exact = score_image(
        "a.jpg",
        ImageLabel(plates=["A123BC77"], boxes=[PLATE]),
        "ok",
        [Prediction(text="A123BC77", box=PLATE)],
    )
    assert image_row(exact).endswith("ok              A123BC77")
    rejected = score_image("b.jpg", ImageLabel(boxes=[]), "invalid_image: not a JPEG", [])
    assert image_row(rejected).split() == ["b.jpg", "0/0", "0/0", "0", "invalid_image"]


def test_summary_lines() -> None:
    scores = [
        score_image(
            "a.jpg",
            ImageLabel(plates=["A123BC77"], boxes=[PLATE]),
            "ok",
            [Prediction(text="A123BC7", box=PLATE)],
        ),
        score_image("far.jpg", ImageLabel(plates=["H126EK178"]), "ok", []),
        score_image("bad.jpg", ImageLabel(boxes=[]), "invalid_image: not a JPEG", []),
    ]
    lines = summary_lines(totals(scores))
    assert lines[:6] == [
        "images            3 (1 rejected by Triton)",
        "plates found      1/1 (100.0%), mean IoU 1.00",
        "exact texts       0/2 (0.0%)",
        "within 1 char     1/2 (50.0%)",
        "char error rate   0.588 (10 edits / 17 characters)",
        "other boxes       0",
    ]
    assert lines[6].startswith("1 image(s) labelled without boxes")


def test_summary_with_nothing_labelled_has_no_rates() -> None:
    lines = summary_lines(totals([score_image("cat.jpg", ImageLabel(boxes=[]), "ok", [])]))
    assert lines[1] == "plates found      0/0"
    assert lines[4] == "char error rate   (0 edits / 0 characters)"


def test_json_report_round_trips(tmp_path: Path) -> None:
    scores = [score_image("a.jpg", ImageLabel(plates=["A123BC77"], boxes=[PLATE]), "ok", [])]
    report = EvalReport(
        created_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
        settings=EvalSettings(folder=Path("photos"), min_exact=0.5, report=tmp_path / "out" / "r.json"),
        triton_url="127.0.0.1:8001",
        model_version="1",
        totals=totals(scores),
        images=scores,
    )
    path = tmp_path / "out" / "r.json"
    write_report(path, report)
    data = orjson.loads(path.read_bytes())
    assert data["settings"]["folder"] == "photos"
    assert data["settings"]["batch_size"] == 8
    assert data["triton_url"] == "127.0.0.1:8001"
    assert data["totals"]["plates_found"] == 0
    assert data["images"][0]["plates"] == [
        {
            "expected": "A123BC77",
            "read": None,
            "iou": None,
            "country": None,
            "format": None,
            "recognizer": None,
        }
    ]
    assert EvalReport.model_validate(data) == report


def test_country_lines_show_each_country_and_nothing_without_countries() -> None:
    rows = [
        score_crop("a.png", "FUW999", "us", "ok", [Prediction(text="FUW999", box=PLATE)]),
        score_image(
            "b.jpg", ImageLabel(boxes=[PLATE, ELSEWHERE]), "ok", [Prediction(text="", box=PLATE)], "ro"
        ),
    ]
    lines = country_lines(totals_by_country(rows))
    assert lines[2].split() == ["country", "texts", "exact", "chars", "boxes", "found", "@0.3"]
    assert lines[3].split() == ["ro", "0", "-", "-", "2", "0.500", "0.500"]
    assert lines[4].split() == ["us", "1", "1.000", "1.000", "0", "-", "-"]
    assert country_lines({}) == []
