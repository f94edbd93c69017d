"""The benchmarks' pure helpers: figures, tables, config parsing, CPU accounting, input frames."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bench.cpu import group_cpu_s, meter, process_cpu_s
from bench.frames import CAMERA_HEIGHT, CAMERA_WIDTH, camera_frames, cycle, samples_dir
from bench.limit import config_parameters
from bench.main import parser
from bench.pipeline import BenchError
from bench.report import format_table, latency_ms, rate, ratio
from bench.stream import OutputCollector, Received

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_latency_percentiles_in_milliseconds() -> None:
    figures = latency_ms([i / 1000 for i in range(1, 101)])
    assert figures["p50_ms"] == pytest.approx(50.5)
    assert figures["p99_ms"] == pytest.approx(99.0, abs=0.1)
    assert figures["max_ms"] == 100.0
    assert latency_ms([])["p50_ms"] is None


def test_rate_and_ratio_guard_against_zero() -> None:
    assert rate(10, 2.0) == 5.0
    assert rate(10, 0.0) == 0.0
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(3.0, 0.0) is None
    assert ratio(None, 2.0) is None


def test_table_lines_up_columns_and_marks_missing_cells() -> None:
    table = format_table([{"system": "ours", "fps": 12.345}, {"system": "baseline"}], ["system", "fps"])
    lines = table.splitlines()
    assert lines[0].startswith("| system")
    assert len({len(line) for line in lines}) == 1
    assert "12.3" in lines[2] and "-" in lines[3]


def test_detector_parameters_are_read_from_the_real_config() -> None:
    parameters = config_parameters(REPO_ROOT / "model_repository" / "plate_detector" / "config.pbtxt")
    assert parameters["detector"] == "haar"
    assert int(parameters["working_width"]) > 0


def test_cpu_meter_counts_this_process_and_its_group() -> None:
    read = meter(groups=[os.getpgid(0)], this_process=False)
    before, own_before = read(), process_cpu_s(os.getpid())
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert process_cpu_s(os.getpid()) - own_before >= 0.2
    assert read() - before >= 0.2
    assert group_cpu_s(os.getpgid(0)) >= process_cpu_s(os.getpid())


def test_camera_frames_are_distinct_1080p_jpegs_mostly_with_plates() -> None:
    import cv2
    import numpy as np

    frames = camera_frames(samples_dir())
    assert len({frame.jpeg for frame in frames}) == len(frames)
    assert sum(frame.has_plate for frame in frames) == 6
    image = cv2.imdecode(np.frombuffer(frames[0].jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (CAMERA_HEIGHT, CAMERA_WIDTH, 3)
    assert [frame.name for frame in cycle(frames, 10)][8:] == [frames[0].name, frames[1].name]


def test_sweep_grid_must_be_positive_integers(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(["sweep", "--sweep-batch", "4,8", "--sweep-inflight", "2"])
    assert args.sweep_batch == [4, 8] and args.sweep_inflight == [2]
    with pytest.raises(SystemExit):
        parser().parse_args(["sweep", "--sweep-batch", "0"])
    assert "positive integers" in capsys.readouterr().err


class _Worker:
    """Stands in for the worker process: alive, and its own count of frames received."""

    def __init__(self, received: int | None) -> None:
        self.received = received

    def is_running(self) -> bool:
        return True

    def frames_in(self) -> int | None:
        return self.received


def _collector(outputs: int) -> OutputCollector:
    collector = OutputCollector("unused:9092", ["plates"])  # never started: `received` is set here
    collector.received = [Received(0.0, "plates", b"") for _ in range(outputs)]
    return collector


@pytest.fixture
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bench.stream.UNDELIVERED_SETTLE_S", 0.1)
    monkeypatch.setattr("bench.stream.STALL_TIMEOUT_S", 1.5)


def test_wait_for_returns_at_once_when_every_frame_is_out(short_waits: None) -> None:
    assert _collector(5).wait_for(5, _Worker(5)) == 0


def test_wait_for_counts_frames_the_broker_never_delivered(short_waits: None) -> None:
    # 4 of 5 out, and the worker itself received only those 4: the fifth never reached it.
    assert _collector(4).wait_for(5, _Worker(4)) == 1


@pytest.mark.parametrize("received", [5, None])
def test_wait_for_fails_when_a_received_frame_has_no_output(short_waits: None, received: int | None) -> None:
    # The worker got all 5 (or cannot say) but only 4 are out: that is a lost frame, not the broker.
    with pytest.raises(BenchError, match="no output for"):
        _collector(4).wait_for(5, _Worker(received))
