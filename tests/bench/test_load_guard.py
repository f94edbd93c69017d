"""The benchmarks refuse to start on a busy machine (1-minute load above IDLE_LOAD) unless told
--allow-busy; then they warn, and the report says busy. No servers: the runs themselves are stubbed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import bench.chaos
import bench.main
import bench.scenarios
import bench.sightings
import bench.soak
from bench import environment

IDLE = [0.1, 0.2, 0.3]
BUSY = [3.0, 2.5, 2.0]


def set_load(monkeypatch: pytest.MonkeyPatch, load: list[float]) -> None:
    monkeypatch.setattr(environment, "load_average", lambda: list(load))


class Reached(Exception):
    """Raised by a stub: the command got past the load check."""


def reached(*_args: Any, **_kwargs: Any) -> Any:
    raise Reached


# --- check_idle ------------------------------------------------------------------------------


def test_threshold_is_half_a_core() -> None:
    assert environment.IDLE_LOAD == 0.5


@pytest.mark.parametrize("load", [0.0, 0.3, 0.5])
def test_idle_machine_is_not_busy(load: float, capsys: pytest.CaptureFixture[str]) -> None:
    assert environment.check_idle(load=load) is False
    assert environment.check_idle(allow_busy=True, load=load) is False
    assert capsys.readouterr().err == ""


def test_busy_machine_refuses_with_the_load_and_the_way_out(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(environment.BusyMachine) as raised:
        environment.check_idle(load=1.75)
    message = str(raised.value)
    assert "1.75" in message and "0.5" in message and "--allow-busy" in message
    assert capsys.readouterr().err == ""


def test_busy_machine_allowed_warns_and_says_busy(capsys: pytest.CaptureFixture[str]) -> None:
    assert environment.check_idle(allow_busy=True, load=0.51) is True
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("WARNING: busy machine") and "0.51" in line


def test_threshold_can_be_given() -> None:
    assert environment.check_idle(threshold=2.0, load=1.9) is False
    with pytest.raises(environment.BusyMachine):
        environment.check_idle(threshold=0.1, load=0.2)


def test_without_a_load_it_reads_the_1_minute_average(monkeypatch: pytest.MonkeyPatch) -> None:
    set_load(monkeypatch, [0.4, 9.0, 9.0])  # the 5- and 15-minute figures do not count
    assert environment.check_idle() is False
    set_load(monkeypatch, [0.6, 0.0, 0.0])
    with pytest.raises(environment.BusyMachine):
        environment.check_idle()


# --- the three commands -------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [["pipeline", "--frames=4"], ["all"], ["sightings"], ["chaos", "--frames=4"], ["soak"]],
    ids=["pipeline", "all", "sightings", "chaos", "soak"],
)
def test_every_command_refuses_a_busy_machine_with_exit_2(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    set_load(monkeypatch, BUSY)
    monkeypatch.setattr(bench.scenarios, "run_scenarios", reached)
    monkeypatch.setattr(bench.sightings, "scene_passes", reached)
    monkeypatch.setattr(bench.chaos, "valid_frames", reached)
    monkeypatch.setattr(bench.soak, "run", reached)
    assert bench.main.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("error: the 1-minute load average is 3.0, above 0.5")
    assert "--allow-busy" in line


@pytest.mark.parametrize(
    ("argv", "module", "stub"),
    [
        (["sightings", "--allow-busy"], bench.sightings, "scene_passes"),
        (["chaos", "--frames=4", "--allow-busy"], bench.chaos, "valid_frames"),
    ],
    ids=["sightings", "chaos"],
)
def test_allow_busy_lets_sightings_and_chaos_start_with_a_warning(
    argv: list[str],
    module: Any,
    stub: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    set_load(monkeypatch, BUSY)
    monkeypatch.setattr(module, stub, reached)
    monkeypatch.setattr(environment, "versions", lambda *_: {})
    with pytest.raises(Reached):
        bench.main.main(argv)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("WARNING: busy machine")


@pytest.fixture
def stubbed_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench.main.main without Triton, a broker or photos: no results, a made-up server version."""
    monkeypatch.setattr(bench.scenarios, "run_scenarios", lambda args, distinct: ({}, "2.0.0"))
    monkeypatch.setattr(bench.main, "camera_frames", lambda folder: [])
    monkeypatch.setattr(bench.main, "samples_dir", lambda: Path("."))
    monkeypatch.setattr(environment, "machine", lambda: {"cpu_model": "test", "usable_cores": 2})
    monkeypatch.setattr(environment, "versions", lambda *_: {})


def run_main(argv: list[str], tmp_path: Path) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "report.json"
    code = bench.main.main([*argv, f"--report={path}"])
    return code, orjson.loads(path.read_bytes()) if path.exists() else {}


@pytest.mark.usefixtures("stubbed_scenarios")
def test_idle_machine_runs_and_the_report_says_not_busy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    set_load(monkeypatch, IDLE)
    code, report = run_main(["pipeline"], tmp_path)
    assert code == 0
    assert report["busy"] is False and report["load_threshold"] == 0.5
    assert report["load_average"] == {"before": IDLE, "after": IDLE}
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "BUSY" not in captured.out
    summary = captured.out.split("summary:\n", 1)[1]
    assert f"load: before {IDLE}, after {IDLE}" in summary


@pytest.mark.usefixtures("stubbed_scenarios")
def test_allow_busy_runs_warns_and_the_report_says_busy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    set_load(monkeypatch, BUSY)
    code, report = run_main(["pipeline", "--allow-busy"], tmp_path)
    assert code == 0
    assert report["busy"] is True and report["load_threshold"] == 0.5
    assert report["load_average"] == {"before": BUSY, "after": BUSY}
    captured = capsys.readouterr()
    (warning,) = captured.err.splitlines()
    assert warning.startswith("WARNING: busy machine") and "3.0" in warning
    summary = captured.out.split("summary:\n", 1)[1]
    assert f"load: before {BUSY}, after {BUSY}" in summary and "BUSY (figures inflated)" in summary


@pytest.mark.usefixtures("stubbed_scenarios")
def test_busy_machine_writes_no_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    set_load(monkeypatch, BUSY)
    code, report = run_main(["pipeline"], tmp_path)
    assert code == 2 and report == {}


def test_every_parser_has_allow_busy() -> None:
    for parser, argv in (
        (bench.main.parser(), ["all"]),
        (bench.sightings.parser(), []),
        (bench.chaos.parser(), []),
        (bench.soak.parser(), []),
    ):
        assert parser.parse_args(argv).allow_busy is False
        assert parser.parse_args([*argv, "--allow-busy"]).allow_busy is True
