"""`stream-worker eval` end to end: errors exit 1 without a traceback; on the real Triton the
figures of a tiny labelled folder built here from the sample photos (a car, a cat, a corrupt file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from support import EXPECTED_PLATE
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.evaluation.runner import EXIT_BELOW_THRESHOLD, EXIT_FAILED, EXIT_OK
from stream_worker.launchers.ports import free_port
from stream_worker.plates.distance import edit_distance
from tests.conftest import samples_dir

CAR_PLATE_BOX = [94, 331, 132, 342]  # the van's plate in samples/car.jpg (780x439)


def labelled_folder(folder: Path, car_box: list[int] = CAR_PLATE_BOX) -> Path:
    folder.mkdir()
    (folder / "car.jpg").write_bytes((samples_dir() / "car.jpg").read_bytes())
    (folder / "cat.jpeg").write_bytes((samples_dir() / "cat.jpeg").read_bytes())
    (folder / "corrupt.jpg").write_bytes(b"\xff\xd8\xff\xe0 a JPEG header and nothing else")
    labels = {
        "car.jpg": {"plates": [EXPECTED_PLATE], "boxes": [car_box], "image_size": [780, 439]},
        "cat.jpeg": {"plates": [], "boxes": []},
        "corrupt.jpg": {"plates": [], "boxes": []},
    }
    (folder / "labels.json").write_bytes(orjson.dumps(labels))
    return folder


def evaluate(*args: str) -> Any:
    return CliRunner().invoke(app, ["eval", *args])


def test_bad_folder_exits_1_with_the_reason(tmp_path: Path) -> None:
    result = evaluate(str(tmp_path / "missing"), "--url", "127.0.0.1:9")
    assert result.exit_code == EXIT_FAILED
    assert "is not a folder" in result.output and "Traceback" not in result.output


def test_bad_labels_exit_1_before_any_server(tmp_path: Path) -> None:
    (tmp_path / "labels.json").write_text('{"a.jpg": {"boxes": [[1, 2, 3]]}}')
    result = evaluate(str(tmp_path))  # no --url: a server would be started after the labels pass
    assert result.exit_code == EXIT_FAILED
    assert "a.jpg -> boxes -> 0" in result.output and "Traceback" not in result.output


def test_unreachable_triton_exits_1_with_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "a.jpg").write_bytes(b"\xff\xd8\xff")
    (folder / "labels.json").write_text('{"a.jpg": {"boxes": []}}')
    url = f"127.0.0.1:{free_port()}"
    result = evaluate(str(folder), "--url", url, "--timeout", "5")
    assert result.exit_code == EXIT_FAILED
    assert f"Triton at {url} is not ready" in result.output and "stream-worker triton" in result.output
    assert "Traceback" not in result.output


@pytest.mark.integration
def test_eval_scores_a_labelled_folder_on_the_real_triton(triton_url: str, tmp_path: Path) -> None:
    report = tmp_path / "reports" / "eval.json"
    folder = labelled_folder(tmp_path / "photos")
    result = evaluate(str(folder), "--url", triton_url, "--report", str(report), "--batch-size", "2")
    assert result.exit_code == EXIT_OK, result.output

    data = orjson.loads(report.read_bytes())
    assert data["triton_url"] == triton_url and data["model_version"]
    assert data["settings"]["batch_size"] == 2
    rows = {row["file"]: row for row in data["images"]}
    assert list(rows) == ["car.jpg", "cat.jpeg", "corrupt.jpg"]

    car = rows["car.jpg"]
    assert (car["status"], car["labelled"], car["found"]) == ("ok", 1, 1)
    (plate,) = car["plates"]
    assert plate["iou"] >= 0.5
    assert edit_distance(plate["read"], EXPECTED_PLATE) <= 1
    assert car["char_errors"] == edit_distance(plate["read"], EXPECTED_PLATE)
    assert (rows["cat.jpeg"]["status"], rows["cat.jpeg"]["other_boxes"]) == ("ok", 0)
    assert rows["corrupt.jpg"]["status"].startswith("invalid_image")

    totals = data["totals"]
    assert (totals["images"], totals["rejected"]) == (3, 1)
    assert (totals["plates_labelled"], totals["plates_found"], totals["found_rate"]) == (1, 1, 1.0)
    assert (totals["texts_labelled"], totals["texts_within_one"]) == (1, 1)
    assert totals["other_boxes"] == car["other_boxes"]
    assert "plates found      1/1 (100.0%)" in result.output


@pytest.mark.integration
def test_eval_exits_2_below_a_threshold(triton_url: str, tmp_path: Path) -> None:
    folder = labelled_folder(tmp_path / "photos", car_box=[600, 20, 700, 60])  # where no plate is
    result = evaluate(str(folder), "--url", triton_url, "--min-found", "0.5")
    assert result.exit_code == EXIT_BELOW_THRESHOLD, result.output
    assert "below threshold: plates found: 0.0% < 50.0%" in result.output


PLATES_WORLD = samples_dir().parent / "plates-world"
US_CROPS = ("ak1165.png", "ak848.png", "ca1564.png", "ca1635.png")  # a few of us-crops/labels.csv
RO_SCENES = ("dayride_type1_001.mp4_t1055", "dayride_type1_001.mp4_t1085")


def us_crops_folder(folder: Path) -> Path:
    """A few real US crops and their rows of labels.csv, in a folder named as plates-world's."""
    folder.mkdir()
    source = PLATES_WORLD / "us-crops"
    rows = [
        line
        for line in (source / "labels.csv").read_text().splitlines()[1:]
        if line.split(",")[0] in US_CROPS
    ]
    for name in US_CROPS:
        (folder / name).write_bytes((source / name).read_bytes())
    (folder / "labels.csv").write_text("file,state,plate\n" + "\n".join(rows) + "\n")
    return folder


def test_unknown_region_exits_1_before_any_server(tmp_path: Path) -> None:
    folder = labelled_folder(tmp_path / "photos")
    result = evaluate(str(folder), "--region", "xx")  # no --url: a server would start after the plan
    assert result.exit_code == EXIT_FAILED
    assert "unknown region 'xx'" in result.output and "Traceback" not in result.output


@pytest.mark.integration
def test_eval_reads_us_crops_whole_for_their_country(triton_url: str, tmp_path: Path) -> None:
    report = tmp_path / "us.json"
    folder = us_crops_folder(tmp_path / "us-crops")
    result = evaluate(str(folder), "--url", triton_url, "--report", str(report))
    assert result.exit_code == EXIT_OK, result.output

    data = orjson.loads(report.read_bytes())
    assert (data["layout"], data["region"]) == ("crops", "us")
    assert [row["file"] for row in data["images"]] == sorted(US_CROPS)
    for row in data["images"]:
        assert (row["status"], row["matched_by"], row["country"], row["other_boxes"]) == (
            "ok",
            "crop",
            "us",
            0,
        )
        (plate,) = row["plates"]
        assert plate["read"] and plate["recognizer"] == "global"
    us = data["by_country"]["us"]
    assert us["texts_labelled"] == len(US_CROPS)
    assert us["char_accuracy"] >= 0.8  # a near-miss costs a character, not the plate
    assert "by country" in result.output and "us" in result.output


@pytest.mark.integration
def test_eval_measures_detector_recall_on_voc_scenes(triton_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "ro-scenes"
    folder.mkdir()
    for stem in RO_SCENES:
        for suffix in (".jpg", ".xml"):
            (folder / f"{stem}{suffix}").write_bytes(
                (PLATES_WORLD / "ro-scenes" / f"{stem}{suffix}").read_bytes()
            )
    report = tmp_path / "ro.json"
    result = evaluate(str(folder), "--url", triton_url, "--report", str(report), "--min-found", "0.5")
    assert result.exit_code == EXIT_OK, result.output

    data = orjson.loads(report.read_bytes())
    assert (data["layout"], data["region"]) == ("voc", "ro")
    ro = data["by_country"]["ro"]
    assert ro["plates_labelled"] == 3 and ro["texts_labelled"] == 0
    assert ro["plates_found_loose"] >= ro["plates_found"] >= 2
    assert "found at IoU 0.3" in result.output


@pytest.mark.integration
def test_eval_with_a_dash_cameras_detector_scales_finds_the_small_plates(
    triton_url: str, tmp_path: Path
) -> None:
    """Frames whose small, distant plates the default scales miss (docs/performance.md)."""
    folder = tmp_path / "ro-scenes"
    folder.mkdir()
    for stem in ("dayride_type1_001.mp4_t172", "dayride_type1_001.mp4_t684", "dayride_type1_001.mp4_t413"):
        for suffix in (".jpg", ".xml"):
            (folder / f"{stem}{suffix}").write_bytes(
                (PLATES_WORLD / "ro-scenes" / f"{stem}{suffix}").read_bytes()
            )
    found = {}
    for name, extra in (("default", []), ("dash", ["--detector-scales", "1.0,0.5,3.0"])):
        report = tmp_path / f"{name}.json"
        result = evaluate(str(folder), "--url", triton_url, "--report", str(report), *extra)
        assert result.exit_code == EXIT_OK, result.output
        ro = orjson.loads(report.read_bytes())["by_country"]["ro"]
        assert ro["plates_labelled"] == 4
        found[name] = ro["plates_found_loose"]
    assert found == {"default": 1, "dash": 4}


@pytest.mark.integration
def test_eval_against_a_baseline_exits_2_when_a_plate_got_worse(triton_url: str, tmp_path: Path) -> None:
    folder = labelled_folder(tmp_path / "photos")
    first = tmp_path / "first.json"
    assert evaluate(str(folder), "--url", triton_url, "--report", str(first)).exit_code == EXIT_OK

    same = evaluate(str(folder), "--url", triton_url, "--baseline", str(first))
    assert same.exit_code == EXIT_OK, same.output
    assert f"against {first}: 1 plates compared, 0 worse, 0 better" in same.output

    report = orjson.loads(first.read_bytes())
    (plate,) = report["images"][0]["plates"]
    if plate["read"] == EXPECTED_PLATE:  # the van read exactly: make the baseline miss it instead
        plate["read"], plate["iou"], direction = None, None, "better"
    else:  # as today (B840OK197): a baseline that read it exactly
        plate["read"], direction = EXPECTED_PLATE, "worse"
    doctored = tmp_path / "doctored.json"
    doctored.write_bytes(orjson.dumps(report))
    result = evaluate(str(folder), "--url", triton_url, "--baseline", str(doctored))
    assert f"  {direction}: car.jpg plate 0 (text {EXPECTED_PLATE})" in result.output
    if direction == "worse":
        assert result.exit_code == EXIT_BELOW_THRESHOLD
        assert f"below threshold: 1 plate(s) worse than in {doctored}" in result.output
