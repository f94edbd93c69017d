"""bench store-reports at a toy size: every report timed over every window on SQLite (the hourly and
health reports only up to their 31 days), the store bench store-search fills reused (the cameras'
health added once), the report says it all."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import bench.store_reports as store_reports
from bench import environment

TOY = ["--sightings", "3000", "--plates", "150", "--cameras", "10", "--visits", "300", "--repeats", "2"]
TOY += ["--no-postgres"]


def test_every_report_over_every_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "load_average", lambda: [0.1, 0.1, 0.1])
    report = tmp_path / "report.json"
    assert store_reports.main([*TOY, "--cache-dir", str(tmp_path), "--report", str(report)]) == 0
    [result] = orjson.loads(report.read_bytes())["results"]
    timed = {(row["report"], row["days"], row["camera"]) for row in result["reports"]}
    windows = {(days, camera) for days in store_reports.WINDOWS_DAYS for camera in ("all", "camera-07")}
    expected = {
        (name, days, camera)
        for name in ("hourly", "daily", "plates", "top-plates", "alerts", "health", "dwell")
        for days, camera in windows
        if not (name in ("hourly", "health") and days > 31)
    }
    assert timed == expected
    daily = [row for row in result["reports"] if row["report"] == "daily" and row["camera"] == "all"]
    assert [row["rows"] for row in daily][-1] > 300  # a year of days from ten cameras
    health = {
        (row["days"], row["camera"]): row["rows"] for row in result["reports"] if row["report"] == "health"
    }
    # The hours that begin in each window (it ends a minute past the hour): ten cameras' or one's.
    assert health == {
        (days, camera): (days * 24 - 1) * (10 if camera == "all" else 1) for days, camera in health
    }
    assert {days for days, _ in health} == {1, 7, 30}
    assert all(0 <= row["p50_ms"] <= row["p95_ms"] <= row["max_ms"] for row in result["reports"])
    # A second run reuses the filled store (bench store-search's cache).
    assert len(list(tmp_path.glob("sqlite-*.db"))) == 1
    assert store_reports.main([*TOY, "--cache-dir", str(tmp_path)]) == 0
