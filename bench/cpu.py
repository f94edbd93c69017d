"""CPU time spent by the processes of a system under test, read from /proc.

On a machine shared with other work, wall-clock rates move with everybody else's load; the CPU
seconds a design spends per frame barely do. Both are reported: frames/s answers "how fast here,
now", CPU ms per frame answers "how much work", and 2 cores / (CPU s per frame) bounds the rate
the design would reach with the machine to itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
CpuMeter = Callable[[], float]


def stat_fields(pid: str) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process ended meanwhile
        return None
    # The command name (field 2) may hold spaces: the fields after it follow the last ')'.
    return text[text.rindex(")") + 2 :].split()


def process_cpu_s(pid: int) -> float:
    """user + system seconds of one process (all its threads)."""
    fields = stat_fields(str(pid))
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def group_cpu_s(pgid: int) -> float:
    """user + system seconds of every live process in process group `pgid` (Triton and its stubs)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(entry)
        if fields is not None and int(fields[2]) == pgid:
            total += (int(fields[11]) + int(fields[12])) / TICKS_PER_S
    return total


def self_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def meter(groups: Iterable[int] = (), processes: Iterable[int] = (), this_process: bool = True) -> CpuMeter:
    """A function returning the CPU seconds used so far by the given process groups and processes."""
    groups, processes = list(groups), list(processes)

    def read() -> float:
        total = sum(group_cpu_s(g) for g in groups) + sum(process_cpu_s(p) for p in processes)
        return total + (self_cpu_s() if this_process else 0.0)

    return read
