"""What a report must record so that two reports can be compared: the machine, versions, load."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = {
    "numpy": "numpy",
    "onnxruntime": "onnxruntime",
    "onnxruntime_gpu": "onnxruntime-gpu",
    "opencv": "opencv-python-headless",
    "confluent_kafka": "confluent-kafka",
    "tritonclient": "tritonclient",
    "nvidia_pytriton": "nvidia-pytriton",
    "stream_worker": "stream-worker",
}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# The flags that decide which ONNX Runtime kernels run (AVX2, AVX-512, VNNI, BF16, AMX) and so how
# figures from two CPUs compare; /proc/cpuinfo lists about a hundred others.
RELEVANT_FLAG_PREFIXES = ("avx2", "avx512", "avx_vnni", "amx", "fma")


def cpu_flags(text: str | None = None) -> list[str]:
    """The relevant flags of the first CPU in /proc/cpuinfo (`text`: its content), sorted."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = line.split(":", 1)[1].split()
            return sorted({flag for flag in flags if flag.startswith(RELEVANT_FLAG_PREFIXES)})
    return []


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _gpus() -> list[str]:
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in listing.stdout.splitlines() if line.strip()]


def machine() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpu_flags": cpu_flags(),
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "memory_gib": _memory_gib(),
        "gpus": _gpus(),
        "os": platform.platform(),
    }


def load_average() -> list[float]:
    """1/5/15-minute load: on a shared machine, other processes' share of the cores during a run."""
    return [round(value, 2) for value in os.getloadavg()]


# Above this 1-minute load average before a run, other processes share the cores and the figures
# (frames/s, latencies, CPU per frame) come out inflated: the benchmarks refuse to start.
IDLE_LOAD = 0.5
ALLOW_BUSY_HELP = (
    f"Run even when the 1-minute load average is above {IDLE_LOAD}: a warning, and the report "
    "says busy (its figures are inflated)."
)


class BusyMachine(Exception):
    """The machine is busy and --allow-busy was not given: the benchmark must not start."""


def check_idle(threshold: float = IDLE_LOAD, allow_busy: bool = False, load: float | None = None) -> bool:
    """Whether the machine is busy (1-minute load average above `threshold`; `load`: that figure,
    read now when None). Busy without `allow_busy` raises BusyMachine, whose message says how to
    proceed; busy with it prints a one-line warning on stderr and returns True."""
    if load is None:
        load = load_average()[0]
    if load <= threshold:
        return False
    if not allow_busy:
        raise BusyMachine(
            f"the 1-minute load average is {load}, above {threshold}: other processes would share "
            "the cores and inflate the figures. Wait until the machine is idle (`uptime`), or pass "
            "--allow-busy to run anyway (the report then says busy)."
        )
    print(
        f"WARNING: busy machine: the 1-minute load average is {load}, above {threshold}; running "
        "anyway (--allow-busy): the figures are inflated and the report says busy.",
        file=sys.stderr,
        flush=True,
    )
    return True


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


def versions(tritonserver: str | None = None) -> dict[str, Any]:
    """Library versions, the server's own version (from its metadata) and the git commit."""
    found: dict[str, Any] = {"python": platform.python_version(), "python_executable": sys.executable}
    found.update({name: _version(distribution) for name, distribution in DISTRIBUTIONS.items()})
    if found["stream_worker"] is None:  # run from a source tree on PYTHONPATH (bench/gpu.sh)
        import stream_worker

        found["stream_worker"] = stream_worker.__version__
    try:
        import confluent_kafka

        found["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        found["librdkafka"] = None
    found["tritonserver"] = tritonserver
    found["git_commit"] = _git("rev-parse", "HEAD")
    found["git_worktree_dirty"] = bool(_git("status", "--porcelain", "--untracked-files=no"))
    return found


def load_or_refuse(allow_busy: bool) -> tuple[list[float], bool] | None:
    """Before a benchmark: the load average and whether the machine is busy, or None (the refusal
    printed on stderr) when the benchmark must not start."""
    load = load_average()
    try:
        return load, check_idle(allow_busy=allow_busy, load=load[0])
    except BusyMachine as error:
        print(f"error: {error}", file=sys.stderr)
        return None
