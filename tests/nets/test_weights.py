"""Downloading the pinned weights files, against a loopback HTTP server serving temp copies."""

from __future__ import annotations

import dataclasses
import functools
import shutil
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from support import serve_http

from stream_worker.nets import detector_graph, export, global_ocr
from stream_worker.nets.prepare import prepare_models
from stream_worker.nets.weights import PINNED_FILES, WeightsError, ensure_weights, sha256_of
from tests.conftest import weights_dir


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(folder served, base URL) of a loopback server; the folder starts with intact copies."""
    folder = tmp_path / "served"
    folder.mkdir()
    for pinned in PINNED_FILES.values():
        shutil.copyfile(weights_dir() / pinned.file_name, folder / pinned.file_name)
    with serve_http(functools.partial(_QuietHandler, directory=str(folder))) as port:
        yield folder, f"http://127.0.0.1:{port}"


def _intact(folder: Path) -> bool:
    return all(sha256_of(folder / p.file_name) == p.sha256 for p in PINNED_FILES.values())


def test_download_fetches_missing_and_corrupt_files(served: tuple[Path, str], tmp_path: Path) -> None:
    _, base_url = served
    target = tmp_path / "cache" / "weights"
    target.mkdir(parents=True)
    (target / "stn.pth").write_bytes(b"truncated")
    (target / "y5fu_640x_sim.onnx").write_bytes(b"truncated")
    paths = ensure_weights(target, download=True, base_url=base_url)
    assert paths == {name: target / p.file_name for name, p in PINNED_FILES.items()}
    assert _intact(target)
    assert sorted(p.name for p in target.iterdir()) == sorted(p.file_name for p in PINNED_FILES.values())


def test_download_rejects_a_wrong_file(served: tuple[Path, str], tmp_path: Path) -> None:
    folder, base_url = served
    (folder / "lprnet.pth").write_bytes(b"not the checkpoint")
    target = tmp_path / "weights"
    with pytest.raises(WeightsError, match=r"lprnet\.pth has sha256 .* expected"):
        ensure_weights(target, download=True, base_url=base_url)
    assert not (target / "lprnet.pth").exists()
    assert not list(target.glob("*.part"))


def test_download_rejects_a_wrong_detector(served: tuple[Path, str], tmp_path: Path) -> None:
    folder, base_url = served
    detector = folder / "y5fu_640x_sim.onnx"
    detector.write_bytes(detector.read_bytes()[:-1])
    target = tmp_path / "weights"
    with pytest.raises(WeightsError, match=r"y5fu_640x_sim\.onnx has sha256 .* expected 0306de93"):
        ensure_weights(target, download=True, base_url=base_url)
    assert not (target / "y5fu_640x_sim.onnx").exists()
    assert not list(target.glob("*.part"))


def test_without_a_mirror_each_file_comes_from_its_own_url(
    served: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, base_url = served
    (folder / "hyperlpr").mkdir()
    shutil.move(folder / "y5fu_640x_sim.onnx", folder / "hyperlpr" / "y5fu_640x_sim.onnx")
    detector = dataclasses.replace(
        PINNED_FILES["plate_detector"], url=f"{base_url}/hyperlpr/y5fu_640x_sim.onnx"
    )
    monkeypatch.setitem(PINNED_FILES, "plate_detector", detector)
    target = tmp_path / "weights"
    target.mkdir()
    for name in ("stn", "lprnet", "global_ocr"):
        shutil.copyfile(weights_dir() / PINNED_FILES[name].file_name, target / PINNED_FILES[name].file_name)
    ensure_weights(target, download=True)
    assert _intact(target)


def test_a_file_without_a_pinned_url_is_not_downloaded_and_says_where_to_put_it(
    served: tuple[Path, str], tmp_path: Path
) -> None:
    """global_ocr's weights have no public URL pinned: --download fetches the others and names it."""
    folder, _ = served
    target = tmp_path / "weights"
    target.mkdir()
    for name in ("stn", "lprnet", "plate_detector"):
        shutil.copyfile(folder / PINNED_FILES[name].file_name, target / PINNED_FILES[name].file_name)
    with pytest.raises(WeightsError) as raised:
        ensure_weights(target, download=True)
    message = str(raised.value)
    assert "cct_xs_v1_global.onnx has no pinned public URL" in message
    assert str(target.resolve()) in message and PINNED_FILES["global_ocr"].sha256 in message
    assert not (target / "cct_xs_v1_global.onnx").exists()


def test_download_failure_names_the_url(served: tuple[Path, str], tmp_path: Path) -> None:
    folder, base_url = served
    (folder / "stn.pth").unlink()
    with pytest.raises(WeightsError, match=r"Could not download http://127\.0\.0\.1:\d+/stn\.pth"):
        ensure_weights(tmp_path / "weights", download=True, base_url=base_url)


def test_without_download_nothing_is_fetched(served: tuple[Path, str], tmp_path: Path) -> None:
    _, base_url = served
    target = tmp_path / "weights"
    target.mkdir()
    with pytest.raises(WeightsError, match="missing"):
        ensure_weights(target, download=False, base_url=base_url)
    assert not list(target.iterdir())


def test_prepare_downloads_then_verifies(
    served: tuple[Path, str], exported_repository: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, base_url = served
    repository = Path(shutil.copytree(exported_repository, tmp_path / "model_repository"))
    monkeypatch.setattr(export, "export_net", lambda *args: pytest.fail("artifacts were up to date"))
    monkeypatch.setattr(
        detector_graph, "build_detector", lambda *args: pytest.fail("detector was up to date")
    )
    monkeypatch.setattr(
        global_ocr, "place_global_ocr", lambda *args: pytest.fail("global_ocr was up to date")
    )
    target = tmp_path / "downloaded"
    prepare_models(target, repository, download=True, base_url=base_url)
    assert _intact(target)
