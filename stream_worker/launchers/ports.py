"""Ports for the servers this package starts on 127.0.0.1 (brokers, Triton, services, consoles).

A port is picked before its server binds it, seconds later. Asking the kernel for one (bind to
port 0) hands out ports of the ephemeral range, where every outgoing connection also takes its
local port, and two processes asking at once can be handed the same one: the second server then
fails to start. So a port is drawn at random outside the ephemeral range (below it, or above it),
where connect() never goes, and claimed for CLAIM_S by a file that only one process can create; it
is handed out only if nothing is bound to it now.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import tempfile
import time
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL = (32768, 60999)  # the kernel's default, where the file cannot be read
LOWEST = 20000  # below: the ports of well-known services
MIN_CHOICES = 1000  # fewer ports outside the ephemeral range: the kernel picks instead
CLAIM_S = 600.0  # a picked port is not handed out again for this long (its server binds before)
ATTEMPTS = 200


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing is bound to and that no other process was given by
    this function in the last CLAIM_S."""
    choices = ports_to_draw_from(ephemeral_range())
    claims = claims_dir()
    for _ in range(ATTEMPTS if choices else 0):
        port = random.choice(choices)
        if claim(claims, port) and bindable(port):
            return port
    for _ in range(ATTEMPTS):  # no room outside the ephemeral range, or all of it taken
        port = kernel_pick()
        if claim(claims, port):
            return port
    return kernel_pick()


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections."""
    try:
        low, high = (int(field) for field in path.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL
    return low, high


def ports_to_draw_from(ephemeral: tuple[int, int]) -> list[int]:
    """The unprivileged ports outside the ephemeral range, from LOWEST; empty when fewer than
    MIN_CHOICES (then the kernel picks)."""
    low, high = ephemeral
    choices = [*range(LOWEST, max(LOWEST, low)), *range(max(LOWEST, high + 1), 65536)]
    return choices if len(choices) >= MIN_CHOICES else []


def claims_dir() -> Path | None:
    """This user's folder of claimed ports (None when it cannot be made: ports are then unclaimed)."""
    path = Path(tempfile.gettempdir()) / f"stream-worker-ports-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return path


def claim(claims: Path | None, port: int, now: float | None = None) -> bool:
    """True when this process now holds `port`'s claim. A claim older than CLAIM_S is removed and
    not taken in the same call, so two processes finding it stale cannot both take it."""
    if claims is None:
        return True
    path = claims / str(port)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        with contextlib.suppress(OSError):
            if (now if now is not None else time.time()) - path.stat().st_mtime > CLAIM_S:
                path.unlink()
        return False
    except OSError:
        return True  # the folder went away or is full: no claim, as when there is no folder
    os.close(descriptor)
    return True


def bindable(port: int) -> bool:
    """Whether a server could bind 127.0.0.1:`port` now (without SO_REUSEADDR: strictest)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def kernel_pick() -> int:
    """A port the kernel says is free now (from the ephemeral range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
