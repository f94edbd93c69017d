"""Which ONNX file of a model version this host runs: its INT8 graph where the CPU has VNNI, else
`model.onnx`.

Pure (no Triton import), so that model.py and the benchmark's in-process pipeline choose alike. A
model opts in with the parameter `int8_model` (LPRNet: `model.int8.onnx`, written by `stream-worker
models prepare`); it is run only on the CPU provider of a CPU with AVX-512 VNNI or AVX-VNNI, where
ONNX Runtime's int8 kernels beat FP32 (LPRNet about 0.6x the CPU time on an AMD EPYC Zen 4). Without
VNNI its u8s8 kernels can saturate and gain little, so every other host keeps FP32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

FP32_FILE = "model.onnx"
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The CPU's feature flags as Linux names them (empty where /proc/cpuinfo is unreadable)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def onnx_file(
    version_dir: Path, parameters: Mapping[str, str], providers: Sequence[str], flags: frozenset[str]
) -> Path:
    """The graph to run: `int8_model` when the parameter names one that exists, every provider is the
    CPU's and the CPU has VNNI; otherwise `model.onnx`."""
    int8 = parameters.get("int8_model", "")
    if (
        int8
        and list(providers) == ["CPUExecutionProvider"]
        and flags & VNNI_FLAGS
        and (version_dir / int8).is_file()
    ):
        return version_dir / int8
    return version_dir / FP32_FILE
