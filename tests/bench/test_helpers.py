"""The benchmarks' pure helpers: figures, tables, config parsing, CPU accounting, input frames."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cpu import group_cpu_s, meter, process_cpu_s
from bench.environment import cpu_flags
from bench.frames import CAMERA_HEIGHT, CAMERA_WIDTH, camera_frames, cycle, samples_dir
from bench.limit import InProcessPipeline
from bench.main import parser
from bench.pipeline import BenchError
from bench.regions import plate_costs
from bench.report import format_table, latency_ms, rate, ratio
from bench.repository import (
    BASELINE_REPOSITORY,
    config_parameters,
    config_path,
    parse_overrides,
    served_repositories,
    set_parameter,
)
from bench.stream import OutputCollector, Received

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_REPOSITORY = REPO_ROOT / "model_repository"


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
    parameters = config_parameters(config_path(MODEL_REPOSITORY, "plate_recognition"))
    assert parameters["detector"] == "yolo"
    assert parameters["detector_scales"] == "1.0,0.5"
    assert float(parameters["score_threshold"]) > 0 and int(parameters["detector_max_batch"]) > 0
    assert int(config_parameters(config_path(MODEL_REPOSITORY, "plate_detector"))["intra_op_threads"]) > 0


def test_config_path_prefers_the_named_variant_and_falls_back_like_triton() -> None:
    assert config_path(MODEL_REPOSITORY, "stn", "gpu") == MODEL_REPOSITORY / "stn" / "configs" / "gpu.pbtxt"
    assert config_path(MODEL_REPOSITORY, "stn", "nope") == MODEL_REPOSITORY / "stn" / "config.pbtxt"
    assert config_path(MODEL_REPOSITORY, "stn") == MODEL_REPOSITORY / "stn" / "config.pbtxt"


def test_set_parameter_replaces_or_appends() -> None:
    text = 'name: "m"\nparameters: { key: "a", value: { string_value: "1" } }\n'
    replaced = set_parameter(text, "a", "1.0,0.5")
    assert config_parameters_of(replaced) == {"a": "1.0,0.5"}
    appended = set_parameter(replaced, "b", "x")
    assert config_parameters_of(appended) == {"a": "1.0,0.5", "b": "x"}
    with pytest.raises(BenchError):
        set_parameter(text, "a", 'say "hi"')


def config_parameters_of(text: str) -> dict[str, str]:
    from bench.repository import _PARAMETER

    return {match["key"]: match["value"] for match in _PARAMETER.finditer(text)}


def test_parameter_overrides_parse_model_key_value() -> None:
    overrides = parse_overrides(["plate_recognition.detector_scales=1.0", "stn.onnx_providers=A,B"])
    assert overrides == {"plate_recognition": {"detector_scales": "1.0"}, "stn": {"onnx_providers": "A,B"}}
    for bad in ("detector_scales=1.0", "plate_recognition.detector_scales", ".x=1"):
        with pytest.raises(BenchError, match=r"MODEL\.KEY=VALUE"):
            parse_overrides([bad])


def test_served_repositories_point_the_baseline_at_what_is_served(tmp_path: Path) -> None:
    repository = tmp_path / "model_repository"
    for model in ("plate_recognition", "stn"):
        (repository / model / "1").mkdir(parents=True)
        scales = set_parameter(f'name: "{model}"\n', "detector_scales", "1.0,0.75")
        (repository / model / "config.pbtxt").write_text(scales)
    with served_repositories(repository) as (ours, baseline):
        # A snapshot: edits to the tree during a run cannot reach the served models.
        assert ours != repository and (ours / "plate_recognition" / "config.pbtxt").is_file()
        for model in ("baseline", "baseline_per_core"):
            parameters = config_parameters(baseline / model / "config.pbtxt")
            assert parameters["served_repository"] == str(ours)
            assert parameters["served_config_name"] == ""
            assert (baseline / model / "1" / "model.py").is_file()
    assert not baseline.exists()
    overrides = {"plate_recognition": {"detector_scales": "1.0"}}
    with served_repositories(repository, "gpu", overrides) as (ours, baseline):
        assert config_parameters(ours / "plate_recognition" / "config.pbtxt")["detector_scales"] == "1.0"
        assert config_parameters(ours / "stn" / "config.pbtxt")["detector_scales"] == "1.0,0.75"
        parameters = config_parameters(baseline / "baseline" / "config.pbtxt")
        assert parameters["served_repository"] == str(ours)
        assert parameters["served_config_name"] == "gpu"
    assert (
        config_parameters(repository / "plate_recognition" / "config.pbtxt")["detector_scales"] == "1.0,0.75"
    )
    with (
        pytest.raises(BenchError, match="no model"),
        served_repositories(repository, None, {"nope": {"a": "1"}}),
    ):
        pass


def test_baseline_per_core_runs_the_baseline_code() -> None:
    per_core = BASELINE_REPOSITORY / "baseline_per_core" / "1" / "model.py"
    assert per_core.resolve() == (BASELINE_REPOSITORY / "baseline" / "1" / "model.py").resolve()
    parameters = config_parameters(BASELINE_REPOSITORY / "baseline_per_core" / "config.pbtxt")
    assert parameters["detector_intra_op_threads"] == "1"


def test_gpu_script_is_valid_bash_and_puts_every_network_on_cuda() -> None:
    script = REPO_ROOT / "bench" / "gpu.sh"
    finished = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert finished.returncode == 0, finished.stderr
    text = script.read_text()
    assert "for model in plate_detector stn lprnet; do" in text
    assert '--parameter "$model.onnx_providers=$PROVIDERS"' in text
    assert '"${PARAMETERS[@]}"' in text and "haar" not in text.lower()
    # The parameter the script sets is the one the ONNX models read.
    assert 'parameters.get("onnx_providers"' in (MODEL_REPOSITORY / "lprnet" / "1" / "model.py").read_text()
    assert (MODEL_REPOSITORY / "plate_detector" / "1" / "model.py").resolve() == (
        MODEL_REPOSITORY / "lprnet" / "1" / "model.py"
    ).resolve()


_BUSY_CHILD = """
import sys, time
sys.stdin.readline()
deadline = time.process_time() + 0.3
while time.process_time() < deadline:
    pass
print("done", flush=True)
sys.stdin.readline()
"""


def test_cpu_meter_counts_a_process_group() -> None:
    """A child in a session of its own, so that no other process of the group (the test run's
    servers and services, which come and go) changes the count between the two reads."""
    child = subprocess.Popen(
        [sys.executable, "-c", _BUSY_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        read = meter(groups=[child.pid], this_process=False)
        before = read()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        assert read() - before >= 0.2
        own = process_cpu_s(child.pid)  # read first: the group's total includes it
        assert group_cpu_s(child.pid) >= own >= 0.2
    finally:
        child.kill()
        child.wait()


def test_cpu_meter_counts_this_process() -> None:
    read = meter()
    before = read()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    assert read() - before >= 0.2


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


def test_bench_without_weights_says_where_it_looked_not_a_traceback(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    import bench.main
    from stream_worker.cli import app
    from stream_worker.nets.weights import verify_weights

    monkeypatch.setattr(bench.main, "main", lambda argv: verify_weights(tmp_path) and 0)
    result = CliRunner().invoke(app, ["bench", "gating"])
    assert result.exit_code == 2
    assert "error: Model weights unusable in" in result.output and str(tmp_path) in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


@pytest.mark.integration
def test_a_benchmark_stopped_with_sigterm_stops_the_servers_it_started(tmp_path):
    import signal
    import sys

    command = [sys.executable, "-m", "stream_worker", "bench", "sightings", "--allow-busy", "--limit", "1"]
    from conftest import weights_dir
    from support import process_tree

    env = {**os.environ, "LPR_WEIGHTS_DIR": str(weights_dir())}
    bench = subprocess.Popen(
        command, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    started: set[int] = set()
    while time.monotonic() < deadline and bench.poll() is None:
        started |= process_tree(bench.pid) - {bench.pid}
        if len(started) >= 2:  # the broker and Triton (or its launcher) are up or on their way
            break
        time.sleep(0.2)
    assert bench.poll() is None and started, "the benchmark ended or started nothing"
    bench.send_signal(signal.SIGTERM)
    assert bench.wait(60) == 128 + signal.SIGTERM
    gone = time.monotonic() + 30
    while time.monotonic() < gone and any(os.path.exists(f"/proc/{pid}") for pid in started):
        time.sleep(0.2)
    left = [pid for pid in started if os.path.exists(f"/proc/{pid}")]
    assert not left, f"still running after the benchmark stopped: {left}"


def test_cpu_flags_keep_the_vector_and_matrix_ones() -> None:
    cpuinfo = (
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
        "flags\t\t: fpu sse2 avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_tile amx_bf16 avx_vnni sha_ni\n"
        "processor\t: 1\nflags\t\t: fpu sse2\n"
    )
    assert cpu_flags(cpuinfo) == [
        "amx_bf16",
        "amx_tile",
        "avx2",
        "avx512_bf16",
        "avx512_vnni",
        "avx512f",
        "avx_vnni",
        "fma",
    ]
    assert cpu_flags("model name\t: no flags line\n") == []


def test_plate_costs_give_the_stn_and_lprnet_apart(prepared_model_repository: Path) -> None:
    frames = [frame for frame in camera_frames(samples_dir()) if frame.has_plate]
    costs = plate_costs(InProcessPipeline(prepared_model_repository), frames)["cpu_ms_per_plate"]
    print(costs)
    assert list(costs) == ["stn", "lprnet", "global_ocr", "stn_lprnet"]
    for per_run in ("one_per_run", "batched"):
        assert all(costs[model][per_run] > 0 for model in costs)
        assert costs["stn_lprnet"][per_run] == round(costs["stn"][per_run] + costs["lprnet"][per_run], 2)


def test_the_in_process_pipeline_runs_lprnet_as_triton_would(
    prepared_model_repository: Path, tmp_path: Path
) -> None:
    """INT8 on a VNNI CPU, as model.py picks it; `--parameter lprnet.int8_model=` gives FP32."""
    vnni = bool({"avx512_vnni", "avx_vnni"} & set(cpu_flags()))
    pipeline = InProcessPipeline(prepared_model_repository)
    assert pipeline.settings()["onnx_graph_files"] == {
        "plate_detector": "model.onnx",
        "stn": "model.onnx",
        "lprnet": "model.int8.onnx" if vnni else "model.onnx",
    }
    copy = Path(shutil.copytree(prepared_model_repository, tmp_path / "repository", symlinks=True))
    config = copy / "lprnet" / "config.pbtxt"
    config.write_text(set_parameter(config.read_text(), "int8_model", ""))
    assert InProcessPipeline(copy).graph_files["lprnet"] == "model.onnx"
