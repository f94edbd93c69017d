"""The `recognize` command: JSON lines, annotation drawing, exit codes, and runs on the real Triton."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.launchers.ports import free_port
from stream_worker.plates.distance import edit_distance
from stream_worker.plates.reading import Reading
from stream_worker.recognition import FrameResult, Plate
from stream_worker.tools.recognize import (
    BOX_COLOUR,
    EXIT_TRITON_UNAVAILABLE,
    EXIT_UNKNOWN_REGION,
    EXIT_UNREADABLE_IMAGE,
    ImageFile,
    annotated_path,
    draw_plates,
    result_record,
    write_annotated,
)
from tests.conftest import samples_dir

CAR_BOX = (94.0, 331.0, 132.0, 342.0)
CAR_RESULT = FrameResult(
    status="ok",
    width=780,
    height=439,
    plates=(Plate(text="B840OK197", confidence=0.8125, box=CAR_BOX, detection_score=0.5),),
)
CAR_READING = Reading(
    text="B840CK197",
    confidence=0.75,
    character_confidences=(0.9,) * 9,
    recognizer="lprnet",
    country="ru",
    format="ru/private",
    format_valid=True,
)
US_CROP = "ak848.png"  # ../shared/plates-world/us-crops, labelled FPJ331


@pytest.fixture
def car_path(car_jpeg: bytes, tmp_path: Path) -> Path:
    path = tmp_path / "samples" / "car.jpg"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(car_jpeg)
    return path


@pytest.fixture
def cat_path(cat_jpeg: bytes, tmp_path: Path) -> Path:
    path = tmp_path / "samples" / "cat.jpeg"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(cat_jpeg)
    return path


def box_outline(box: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the one-pixel outline of `box`."""
    x1, y1, x2, y2 = (int(v) for v in box)
    xs = np.arange(x1, x2 + 1)
    ys = np.arange(y1, y2 + 1)
    rows = np.concatenate([np.full_like(xs, y1), np.full_like(xs, y2), ys, ys])
    cols = np.concatenate([xs, xs, np.full_like(ys, x1), np.full_like(ys, x2)])
    return rows, cols


def test_result_record_is_the_documented_json_shape() -> None:
    record = orjson.loads(orjson.dumps(result_record(Path("a/car.jpg"), CAR_RESULT, [CAR_READING])))
    assert record == {
        "file": "a/car.jpg",
        "status": "ok",
        "size": {"width": 780, "height": 439},
        "plates": [
            {
                "text": "B840CK197",
                "confidence": 0.75,
                "box": {"x1": 94.0, "y1": 331.0, "x2": 132.0, "y2": 342.0},
                "detection_score": 0.5,
                "country": "ru",
                "format": "ru/private",
                "format_valid": True,
                "recognizer": "lprnet",
            }
        ],
    }


def test_raw_adds_each_recognizers_unconstrained_read() -> None:
    global_probs = np.full((9, 37), 0.001, np.float32)
    for slot, index in enumerate([11, 8, 4, 0, 24, 20, 1, 9, 7]):  # B840OK197 in 0-9A-Z
        global_probs[slot, index] = 0.9
    plate = Plate(
        text="B840OK197", confidence=0.8, box=CAR_BOX, detection_score=0.5, global_probs=global_probs
    )
    result = FrameResult("ok", 780, 439, (plate,))
    (record,) = result_record(Path("car.jpg"), result, [CAR_READING], raw=True)["plates"]
    assert (record["text"], record["raw"]) == ("B840CK197", {"global": "B840OK197"})
    (plain,) = result_record(Path("car.jpg"), result, [CAR_READING])["plates"]
    assert "raw" not in plain


def test_unknown_region_exits_2_listing_the_known_ones_before_anything_else(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jpg"  # not read: the region is checked first
    result = CliRunner().invoke(app, ["recognize", str(missing), "--region", "xx", "--url", "127.0.0.1:1"])
    assert result.exit_code == EXIT_UNKNOWN_REGION
    assert "unknown region 'xx'" in result.output
    assert all(code in result.output for code in ("auto", "ru", "us", "eu"))
    assert "Traceback" not in result.output


def test_drawing_changes_the_box_outline_and_nothing_far_from_it(car_path: Path) -> None:
    original = cv2.imread(str(car_path))
    annotated = draw_plates(original, CAR_RESULT)

    rows, cols = box_outline(CAR_BOX)
    assert (annotated[rows, cols] == BOX_COLOUR).all()
    assert (original[rows, cols] != BOX_COLOUR).any(axis=1).all()

    changed_rows, changed_cols = np.nonzero((annotated != original).any(axis=2))
    # The box, plus its label just above it (about 20 px high, 150 px wide at this size).
    assert changed_rows.min() >= 331 - 40 and changed_rows.max() <= 342 + 5
    assert changed_cols.min() >= 94 - 5 and changed_cols.max() <= 94 + 200
    assert (annotated[: 331 - 40] == original[: 331 - 40]).all()
    # The label sits above the box: pixels changed there.
    assert (annotated[331 - 25 : 331, 94:132] != original[331 - 25 : 331, 94:132]).any()
    assert (original == cv2.imread(str(car_path))).all(), "the source image must not be drawn on"


def test_label_goes_below_a_box_at_the_top_edge() -> None:
    image = np.full((100, 200, 3), 255, dtype=np.uint8)
    result = FrameResult("ok", 200, 100, (Plate("A001AA77", 0.5, (10.0, 0.0, 60.0, 15.0), 0.5),))
    annotated = draw_plates(image, result)
    assert (annotated[20:30, 10:60] != 255).any()


def test_written_annotated_copy_shows_the_box(car_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "car.annotated.jpg"
    assert write_annotated(ImageFile(car_path, car_path.read_bytes()), CAR_RESULT, target)
    written = cv2.imread(str(target))
    original = cv2.imread(str(car_path))
    assert written.shape == original.shape
    rows, cols = box_outline(CAR_BOX)
    # JPEG re-encoding blurs the 2-px green line a little, but it stays clearly green.
    green_distance = np.abs(written[rows, cols].astype(int) - BOX_COLOUR).sum(axis=1)
    assert np.median(green_distance) < 80
    far = np.abs(written[:250].astype(int) - original[:250].astype(int))
    assert np.percentile(far, 99) < 30


def test_undecodable_image_is_not_annotated(tmp_path: Path) -> None:
    target = tmp_path / "bad.annotated.jpg"
    bad = FrameResult("invalid_image: not a JPEG", 0, 0, ())
    assert not write_annotated(ImageFile(Path("bad.jpg"), b"not a jpeg"), bad, target)
    assert not target.exists()


def test_annotated_names_keep_png_and_never_collide(tmp_path: Path) -> None:
    taken: set[Path] = set()
    assert annotated_path(Path("a/car.jpg"), tmp_path, taken).name == "car.annotated.jpg"
    assert annotated_path(Path("b/car.jpeg"), tmp_path, taken).name == "car-2.annotated.jpg"
    assert annotated_path(Path("c/shot.PNG"), tmp_path, taken).name == "shot.annotated.png"


def test_unreadable_file_is_named_and_exits_2(car_path: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.jpg"
    result = CliRunner().invoke(app, ["recognize", str(car_path), str(missing), "--url", "127.0.0.1:1"])
    assert result.exit_code == EXIT_UNREADABLE_IMAGE
    assert str(missing) in result.output and "cannot read" in result.output


def test_unreachable_triton_names_the_setting_and_exits_3(car_path: Path) -> None:
    url = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(app, ["recognize", str(car_path), "--url", url, "--timeout", "10"])
    assert result.exit_code == EXIT_TRITON_UNAVAILABLE
    assert url in result.output
    assert "--url" in result.output and "STREAM_WORKER_TRITON_URL" in result.output


def test_url_defaults_to_the_environment_variable(car_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("STREAM_WORKER_TRITON_URL", url)
    result = CliRunner().invoke(app, ["recognize", str(car_path), "--timeout", "10"])
    assert result.exit_code == EXIT_TRITON_UNAVAILABLE
    assert url in result.output


@pytest.mark.integration
def test_recognize_prints_one_line_per_image_and_annotates(
    triton_url: str, car_path: Path, cat_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "annotated"
    args = ["recognize", str(car_path), str(cat_path), "--url", triton_url, "--annotate", str(out)]
    result = CliRunner().invoke(app, [*args, "--timeout", "120"])
    assert result.exit_code == 0, result.output

    car, cat = (orjson.loads(line) for line in result.stdout.splitlines())
    assert (car["file"], car["status"], car["size"]) == (str(car_path), "ok", {"width": 780, "height": 439})
    assert len(car["plates"]) == 1
    assert set(car["plates"][0]) == {
        "text",
        "confidence",
        "box",
        "detection_score",
        "country",
        "format",
        "format_valid",
        "recognizer",
    }
    assert car["plates"][0]["country"] == "ru"  # auto, the default, read the van's Russian plate
    assert (cat["file"], cat["status"], cat["plates"]) == (str(cat_path), "ok", [])

    assert sorted(p.name for p in out.iterdir()) == ["car.annotated.jpg", "cat.annotated.jpg"]
    box = car["plates"][0]["box"]
    rows, cols = box_outline((box["x1"], box["y1"], box["x2"], box["y2"]))
    written = cv2.imread(str(out / "car.annotated.jpg"))
    assert np.median(np.abs(written[rows, cols].astype(int) - BOX_COLOUR).sum(axis=1)) < 80


@pytest.mark.integration
def test_a_us_crop_read_whole_for_region_us(triton_url: str, tmp_path: Path) -> None:
    crop = samples_dir().parent / "plates-world" / "us-crops" / US_CROP
    args = ["recognize", str(crop), "--region", "us", "--crop", "--raw", "--url", triton_url]
    result = CliRunner().invoke(app, [*args, "--timeout", "120"])
    assert result.exit_code == 0, result.output
    (line,) = (orjson.loads(line) for line in result.stdout.splitlines())
    assert line["status"] == "ok"
    (plate,) = line["plates"]
    assert (plate["country"], plate["recognizer"]) == ("us", "global")
    assert edit_distance(plate["text"], "FPJ331") <= 1 and set(plate["raw"]) == {"global"}
    height, width = cv2.imread(str(crop)).shape[:2]
    assert plate["box"] == {"x1": 0.0, "y1": 0.0, "x2": float(width), "y2": float(height)}
