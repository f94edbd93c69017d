"""`stream-worker report` as typed: the report of a real SQLite store as CSV, JSON Lines and PNG,
to stdout or a file, and the exit codes of bad options and a missing store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from store_records import T0, plate_sighting, plate_visit, stored_in
from typer.testing import CliRunner

from stream_worker.cli import app

RANGE = ["--since", T0.isoformat(), "--until", (T0 + timedelta(days=1)).isoformat()]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return stored_in(
        tmp_path / "store",
        [
            plate_sighting("a", "B840OK197", T0),
            plate_sighting("b", "B840OK197", T0 + timedelta(minutes=5), camera_id="yard"),
            plate_sighting("c", "A123BC77", T0 + timedelta(hours=2)),
            plate_sighting("old", "A123BC77", T0 - timedelta(days=2)),
        ],
        visits=[
            plate_visit("short", "B840OK197", "closed", dwell=timedelta(minutes=3)),
            plate_visit("long", "A123BC77", "closed", dwell=timedelta(hours=5)),
        ],
    )


def _report(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["report", *args])
    return result.exit_code, result.stdout, result.stderr


def test_csv_and_json_lines_on_stdout(data_dir: Path) -> None:
    code, out, _ = _report("hourly", *RANGE, "--data-dir", str(data_dir))
    assert code == 0
    assert out.splitlines() == [
        "hour,camera_id,sightings",
        "2026-03-01T12:00Z,gate,1",
        "2026-03-01T12:00Z,yard,1",
        "2026-03-01T14:00Z,gate,1",
    ]
    code, out, _ = _report(
        "top-plates", *RANGE, "--camera", "gate", "--format", "jsonl", "--data-dir", str(data_dir)
    )
    assert code == 0
    assert [(row["plate"], row["sightings"]) for row in map(orjson.loads, out.splitlines())] == [
        ("B840OK197", 1),  # ties by folded text: 8840OK197 before A123BC77
        ("A123BC77", 1),
    ]


def test_the_dwell_report(data_dir: Path, tmp_path: Path) -> None:
    code, out, _ = _report("dwell", *RANGE, "--data-dir", str(data_dir))
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == ["dwell,visits,from_s,until_s", "0-5 min,1,0,300", "5-15 min,0,300,900"]
    assert "4-8 h,1,14400,28800" in lines and lines[-1] == "24 h+,0,86400,"
    code, out, _ = _report("dwell", *RANGE, "--format", "jsonl", "--data-dir", str(data_dir))
    assert sum(row["visits"] for row in map(orjson.loads, out.splitlines())) == 2
    pytest.importorskip("matplotlib")
    chart = tmp_path / "dwell.png"
    code, _, err = _report("dwell", *RANGE, "--format", "png", "-o", str(chart), "--data-dir", str(data_dir))
    assert code == 0 and chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), err


def test_png_to_a_file(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    chart = tmp_path / "daily.png"
    code, _, err = _report("daily", *RANGE, "--format", "png", "-o", str(chart), "--data-dir", str(data_dir))
    assert code == 0, err
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "2 rows written" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["visits", *RANGE], 2, "unknown report 'visits'"),
        (["daily", *RANGE, "--format", "xlsx"], 2, "--format must be one of csv, jsonl, png"),
        (["daily", *RANGE, "--format", "png"], 2, "needs --output"),
        (["daily", "--since", "yesterday"], 2, "neither an ISO 8601 time"),
        (["daily", "--since", "1d", "--until", "2d"], 2, "until must be after since"),
    ],
)
def test_bad_options_exit_2(data_dir: Path, args: list[str], code: int, message: str) -> None:
    result = _report(*args, "--data-dir", str(data_dir))
    assert (result[0], message in result[2]) == (code, True), result


def test_no_store_exits_3(tmp_path: Path) -> None:
    code, _, err = _report("daily", "--data-dir", str(tmp_path / "nowhere"))
    assert code == 3 and "no history store" in err
