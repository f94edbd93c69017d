"""graphs.py: which ONNX file a model version runs on this host (INT8 only on a VNNI CPU's provider)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.model_repository.conftest import load_model_file

graphs = load_model_file("lprnet", "graphs")
CPU = ["CPUExecutionProvider"]
INT8 = {"int8_model": "model.int8.onnx"}


@pytest.fixture
def version_dir(tmp_path: Path) -> Path:
    for name in ("model.onnx", "model.int8.onnx"):
        (tmp_path / name).write_bytes(b"graph")
    return tmp_path


@pytest.mark.parametrize("flag", ["avx512_vnni", "avx_vnni"])
def test_int8_on_a_vnni_cpu(version_dir: Path, flag: str) -> None:
    assert graphs.onnx_file(version_dir, INT8, CPU, frozenset({"avx2", flag})).name == "model.int8.onnx"


@pytest.mark.parametrize(
    ("parameters", "providers", "flags"),
    [
        (INT8, CPU, frozenset({"avx2", "avx512f", "avx512_bf16"})),  # no VNNI
        ({}, CPU, frozenset({"avx512_vnni"})),  # the model does not opt in
        ({"int8_model": ""}, CPU, frozenset({"avx512_vnni"})),  # turned off (--parameter lprnet.int8_model=)
        (INT8, ["CUDAExecutionProvider", "CPUExecutionProvider"], frozenset({"avx512_vnni"})),
        (INT8, CPU, frozenset()),  # flags unknown
    ],
)
def test_fp32_otherwise(version_dir: Path, parameters: dict, providers: list, flags: frozenset) -> None:
    assert graphs.onnx_file(version_dir, parameters, providers, flags).name == "model.onnx"


def test_a_missing_int8_graph_falls_back(version_dir: Path) -> None:
    """A repository prepared before the INT8 graph existed still serves."""
    (version_dir / "model.int8.onnx").unlink()
    assert graphs.onnx_file(version_dir, INT8, CPU, frozenset({"avx512_vnni"})).name == "model.onnx"


def test_cpu_flags(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_vnni\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert graphs.cpu_flags(cpuinfo) == {"fpu", "avx2", "avx512_vnni"}
    assert graphs.cpu_flags(tmp_path / "missing") == frozenset()
