"""bench notify at a toy size on the test broker: every alert delivered to each of the three targets
(webhook with its signature checked, MQTT on a real mosquitto, SMTP on aiosmtpd), paced, the
figures and the report there (not a timed test: nothing is asserted about the rates)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import bench.notify as notify_bench


@pytest.mark.integration
def test_a_toy_run_delivers_every_alert_to_every_target_and_reports_it(
    kafka_bootstrap: str, tmp_path: Path, capsys
) -> None:
    report = tmp_path / "notify.json"
    argv = ["--alerts", "20", "--rate", "40", "--bootstrap-servers", kafka_bootstrap, "--allow-busy"]
    code = notify_bench.main([*argv, "--report", str(report)])
    assert code == 0, capsys.readouterr()
    result = orjson.loads(report.read_bytes())["result"]
    assert result["alerts"] == 20 and result["rate"] == 40 and result["bad_signatures"] == 0
    assert set(result["targets"]) == {"webhook", "mqtt", "email"}
    for figures in result["targets"].values():
        assert figures["delivered"] == 20
        assert 0 < figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]
    assert result["deliveries"] == 60 and result["cpu_ms_per_delivery"] > 0
    out = capsys.readouterr().out
    assert "| email" in out and "| mqtt" in out and "cpu_ms_per_delivery" in out


@pytest.mark.parametrize("argv", [["--alerts", "0"], ["--rate", "-1"]])
def test_it_refuses_nonsense(argv: list[str]) -> None:
    assert notify_bench.main([*argv, "--allow-busy"]) == 2
