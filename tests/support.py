"""Small helpers several test modules share (importable because pytest's pythonpath has tests/)."""

from __future__ import annotations

import contextlib
import http.server
import importlib
import os
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

# The acceptance allows the plate text to be one edit off; the product's own distance measures it.
from stream_worker.plates.distance import edit_distance

__all__ = [
    "EXPECTED_PLATE",
    "edit_distance",
    "in_ci",
    "process_tree",
    "reply",
    "require",
    "require_module",
    "resident_bytes",
    "serve_http",
]

EXPECTED_PLATE = "B840CK197"  # the van in samples/car.jpg


def in_ci() -> bool:
    """CI (`.ci/run` sets CI=true) must have every tool and data set the tests need."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(available: object, what: str) -> None:
    """Go on if `available` (a tool, a data set, a browser) is; else skip the test, or, under CI,
    fail it: a test that cannot run there would pass unnoticed."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} (CI=true: required here; scripts/test-servers.sh installs them)", pytrace=False)
    pytest.skip(what)


def require_module(name: str) -> ModuleType:
    """The module `name`, or `require`'s skip (a failure under CI) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"the Python module {name} is not installed")
        raise


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def process_tree(root: int) -> set[int]:
    """`root` and all its descendants (a local tritonserver and its backend stubs)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            for line in _read(entry / "status").splitlines():
                if line.startswith("PPid:"):
                    parents[int(entry.name)] = int(line.split()[1])
    tree, grown = {root}, True
    while grown:
        children = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= children
        grown = bool(children)
    return tree


def resident_bytes(pids: set[int]) -> int:
    """Resident memory of these processes together: the sum of their proportional set sizes, so that
    the shared memory Triton and its stubs both map counts once."""
    total = 0
    for pid in pids:
        for line in _read(Path(f"/proc/{pid}/smaps_rollup")).splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
    return total


@contextlib.contextmanager
def serve_http(
    handler: Callable[..., http.server.BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    """A real HTTP server on a loopback port (yielded) answering with `handler`, one thread per
    request, shut down at the end; HTTPS with `tls` (a server context)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def reply(handler: http.server.BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
    """Answer a request with `body` whole (status, type, length)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def count_kafka_clients(monkeypatch: pytest.MonkeyPatch, *kinds: str) -> list[str]:
    """Record, in the list returned, each `Producer` or `AdminClient` (`kinds`) that
    `service/compacted.py` makes from now on: "producer" or "admin" per client."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    from stream_worker.service import compacted

    made: list[str] = []
    for kind, base in (("producer", Producer), ("admin", AdminClient)):
        if kind in kinds:

            class Counted(base):  # type: ignore[valid-type,misc]
                def __init__(self, config: dict[str, object], _kind: str = kind) -> None:
                    made.append(_kind)
                    super().__init__(config)

            monkeypatch.setattr(compacted, base.__name__, Counted)
    return made
