"""`prepare_models` and `stream-worker models prepare`: idempotence, weight checks, lazy torch and onnx."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.nets import detector_graph, export, global_ocr, prepare, quantize
from stream_worker.nets.prepare import STAMP_FILE, artifact_path, prepare_models
from stream_worker.nets.weights import PINNED_FILES, WeightsError
from tests.conftest import weights_dir

NAMES = ("stn", "lprnet", "plate_detector", "global_ocr")


@pytest.fixture
def repository(exported_repository: Path, tmp_path: Path) -> Path:
    """A private, up-to-date copy of the exported repository."""
    return Path(shutil.copytree(exported_repository, tmp_path / "model_repository"))


def _snapshot(repository: Path) -> dict[str, tuple[int, bytes]]:
    files = [artifact_path(repository, n) for n in NAMES] + [repository / n / "1" / STAMP_FILE for n in NAMES]
    return {str(f): (f.stat().st_mtime_ns, f.read_bytes()) for f in files}


def _forbid_export(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"unexpected export {args}")

    monkeypatch.setattr(export, "export_net", fail)
    monkeypatch.setattr(detector_graph, "build_detector", fail)
    monkeypatch.setattr(global_ocr, "place_global_ocr", fail)
    monkeypatch.setattr(quantize, "quantize_lprnet", fail)


def test_second_prepare_exports_nothing(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(repository)
    _forbid_export(monkeypatch)
    prepare_models(weights_dir(), repository)
    assert _snapshot(repository) == before


def test_stamp_records_the_source(repository: Path) -> None:
    for name in NAMES:
        stamp = orjson.loads((repository / name / "1" / STAMP_FILE).read_bytes())
        assert (stamp["checkpoint"], stamp["checkpoint_sha256"]) == (
            PINNED_FILES[name].file_name,
            PINNED_FILES[name].sha256,
        )
    detector_stamp = orjson.loads((repository / "plate_detector" / "1" / STAMP_FILE).read_bytes())
    print("plate_detector stamp", detector_stamp)
    assert detector_stamp["max_error_vs_source"] < 1e-3
    assert (repository / "plate_detector" / "1" / "model.onnx").stat().st_mode & 0o777 == 0o644
    global_stamp = orjson.loads((repository / "global_ocr" / "1" / STAMP_FILE).read_bytes())
    assert global_stamp["max_error_vs_source"] == 0.0
    for name in ("stn", "lprnet"):
        assert (
            orjson.loads((repository / name / "1" / STAMP_FILE).read_bytes())["max_abs_diff_vs_torch"] < 1e-4
        )


def test_changed_checkpoint_is_re_exported(repository: Path) -> None:
    stamp_path = repository / "lprnet" / "1" / STAMP_FILE
    stamp = orjson.loads(stamp_path.read_bytes())
    stamp_path.write_bytes(orjson.dumps({**stamp, "checkpoint_sha256": "0" * 64}))
    lprnet_onnx, stn_onnx = artifact_path(repository, "lprnet"), artifact_path(repository, "stn")
    before = _snapshot(repository)
    prepare_models(weights_dir(), repository)
    after = _snapshot(repository)
    assert orjson.loads(stamp_path.read_bytes())["checkpoint_sha256"] == stamp["checkpoint_sha256"]
    assert after[str(lprnet_onnx)][0] != before[str(lprnet_onnx)][0]
    assert after[str(stn_onnx)] == before[str(stn_onnx)]


def test_new_detector_format_is_rewritten_alone(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    detector = artifact_path(repository, "plate_detector")
    before = _snapshot(repository)
    monkeypatch.setattr(export, "export_net", lambda *args: pytest.fail("stn/lprnet were up to date"))
    monkeypatch.setitem(
        prepare.ARTIFACTS,
        "plate_detector",
        dataclasses.replace(
            prepare.ARTIFACTS["plate_detector"], format_version=prepare.DETECTOR_FORMAT_VERSION + 1
        ),
    )
    prepare_models(weights_dir(), repository)
    after = _snapshot(repository)
    assert after[str(detector)][0] != before[str(detector)][0]
    assert after[str(detector)][1] == before[str(detector)][1]  # the rewrite is deterministic
    stamp = orjson.loads((detector.parent / STAMP_FILE).read_bytes())
    assert stamp["export_format"] == prepare.DETECTOR_FORMAT_VERSION + 1
    assert {k: v for k, v in after.items() if "plate_detector" not in k} == {
        k: v for k, v in before.items() if "plate_detector" not in k
    }


def _copy_weights(tmp_path: Path, names: tuple[str, ...] = NAMES) -> Path:
    copy = tmp_path / "weights"
    copy.mkdir()
    for name in names:
        file_name = PINNED_FILES[name].file_name
        shutil.copyfile(weights_dir() / file_name, copy / file_name)
    return copy


def test_corrupt_checkpoint_is_named(tmp_path: Path, repository: Path) -> None:
    weights = _copy_weights(tmp_path)
    corrupt = weights / "lprnet.pth"
    data = bytearray(corrupt.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(bytes(data))
    with pytest.raises(WeightsError) as raised:
        prepare_models(weights, repository)
    message = str(raised.value)
    assert f"{corrupt}: corrupt" in message
    assert "stn.pth" not in message.splitlines()[1]
    assert "LPR_WEIGHTS_DIR" in message and "--download" in message


def test_missing_checkpoint_is_named(tmp_path: Path, repository: Path) -> None:
    weights = _copy_weights(tmp_path, names=("stn",))
    with pytest.raises(WeightsError) as raised:
        prepare_models(weights, repository)
    message = str(raised.value)
    assert f"{weights / 'lprnet.pth'}: missing" in message
    assert str(weights / "stn.pth") not in message
    assert "LPR_WEIGHTS_DIR" in message and "--download" in message


def test_corrupt_detector_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    weights = _copy_weights(tmp_path)
    detector = weights / "y5fu_640x_sim.onnx"
    data = bytearray(detector.read_bytes())
    data[len(data) // 2] ^= 0xFF
    detector.write_bytes(bytes(data))
    with pytest.raises(WeightsError) as raised:
        prepare_models(weights, tmp_path / "repo")
    message = str(raised.value)
    assert (
        f"{detector}: corrupt (sha256 " in message
        and f"expected {PINNED_FILES['plate_detector'].sha256}" in message
    )
    assert (
        f"y5fu_640x_sim.onnx: {PINNED_FILES['plate_detector'].url} (Apache-2.0, szad670401/HyperLPR)"
        in message
    )
    assert "stn.pth:" not in message and "lprnet.pth:" not in message
    assert not (tmp_path / "repo").exists()


def test_missing_detector_is_named_with_its_url_and_licence(tmp_path: Path, repository: Path) -> None:
    weights = _copy_weights(tmp_path, names=("stn", "lprnet"))
    with pytest.raises(WeightsError) as raised:
        prepare_models(weights, repository)
    message = str(raised.value)
    assert f"{weights / 'y5fu_640x_sim.onnx'}: missing" in message
    assert (
        "https://raw.githubusercontent.com/szad670401/HyperLPR/58ad4ef736fec5289e8c8cb842e066e70c4672c3/"
        "resource/models/onnx/y5fu_640x_sim.onnx (Apache-2.0, szad670401/HyperLPR)"
    ) in message
    assert "LPR_WEIGHTS_DIR" in message and "--download" in message


def test_missing_global_recognizer_is_named_without_a_url(tmp_path: Path, repository: Path) -> None:
    weights = _copy_weights(tmp_path, names=("stn", "lprnet", "plate_detector"))
    with pytest.raises(WeightsError) as raised:
        prepare_models(weights, repository)
    message = str(raised.value)
    assert f"{weights / 'cct_xs_v1_global.onnx'}: missing" in message
    assert "cct_xs_v1_global.onnx: no pinned public URL" in message and "fast-plate-ocr" in message
    assert "stn.pth:" not in message


def test_the_global_recognizer_is_placed_with_plain_names(repository: Path) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(artifact_path(repository, "global_ocr")))
    [(name, shape)] = [(i.name, i.shape) for i in session.get_inputs()]
    assert (name, shape) == ("input", ["batch", 64, 128, 3])
    [(name, shape)] = [(o.name, o.shape) for o in session.get_outputs()]
    assert (name, shape) == ("probabilities", ["batch", 9, 37])


def test_rebuilding_only_the_global_recognizer_never_imports_torch(repository: Path) -> None:
    placed = artifact_path(repository, "global_ocr")
    placed.unlink()
    result = _run_without_torch(
        "from pathlib import Path\nfrom stream_worker.nets.prepare import prepare_models\n"
        f"prepare_models(Path({str(weights_dir())!r}), Path({str(repository)!r}))\n"
    )
    assert result.returncode == 0, result.stderr
    assert placed.is_file()


def _run_without_torch(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter in which `import torch` fails, as on a serving host."""
    prelude = "import sys; sys.modules['torch'] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=300, check=False
    )


def test_up_to_date_prepare_never_imports_torch(repository: Path) -> None:
    result = _run_without_torch(
        "from pathlib import Path\nfrom stream_worker.nets.prepare import prepare_models\n"
        f"prepare_models(Path({str(weights_dir())!r}), Path({str(repository)!r}))\n"
    )
    assert result.returncode == 0, result.stderr


def test_rebuilding_only_the_detector_never_imports_torch(repository: Path) -> None:
    detector = artifact_path(repository, "plate_detector")
    detector.unlink()
    result = _run_without_torch(
        "from pathlib import Path\nfrom stream_worker.nets.prepare import prepare_models\n"
        f"prepare_models(Path({str(weights_dir())!r}), Path({str(repository)!r}))\n"
    )
    assert result.returncode == 0, result.stderr
    assert detector.is_file()


def test_export_without_torch_says_how_to_install_it(tmp_path: Path) -> None:
    result = _run_without_torch(
        "from pathlib import Path\nfrom stream_worker.nets.prepare import prepare_models\n"
        "from stream_worker.nets.errors import ModelPrepareError\n"
        f"try:\n    prepare_models(Path({str(weights_dir())!r}), Path({str(tmp_path)!r}))\n"
        "except ModelPrepareError as error:\n    print(error)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "'torch'" in result.stdout and "pip install 'stream-worker[export]'" in result.stdout


def test_cli_fails_clearly_without_weights(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["models", "prepare", "--weights-dir", str(tmp_path), "--repository", str(tmp_path / "repo")]
    )
    assert result.exit_code == 1
    assert f"{tmp_path / 'stn.pth'}: missing" in result.output
    assert "--download" in result.output
    assert not (tmp_path / "repo").exists()


def test_cli_uses_lpr_weights_dir(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LPR_WEIGHTS_DIR", str(weights_dir()))
    _forbid_export(monkeypatch)
    result = CliRunner().invoke(app, ["models", "prepare", "--repository", str(repository)])
    assert result.exit_code == 0, result.output
