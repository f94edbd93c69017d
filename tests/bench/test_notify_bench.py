"""bench notify at a toy size on the test broker: every alert delivered, the figures and the report
there (not a timed test: nothing is asserted about the rates)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import bench.notify as notify_bench


@pytest.mark.integration
def test_a_toy_run_delivers_every_alert_and_reports_it(kafka_bootstrap: str, tmp_path: Path, capsys) -> None:
    report = tmp_path / "notify.json"
    code = notify_bench.main(
        ["--alerts", "30", "--bootstrap-servers", kafka_bootstrap, "--allow-busy", "--report", str(report)]
    )
    assert code == 0, capsys.readouterr()
    result = orjson.loads(report.read_bytes())["result"]
    assert result["delivered"] == result["alerts"] == 30
    assert result["deliveries_per_s"] > 0 and result["cpu_ms_per_delivery"] > 0
    assert result["p50_ms"] is not None and "deliveries_per_s" in capsys.readouterr().out


def test_it_refuses_nonsense() -> None:
    assert notify_bench.main(["--alerts", "0", "--allow-busy"]) == 2
