"""`<data dir>/up.json`: what `up` runs now (each child's pids, restarts, last exit, addresses),
rewritten whole (a rename) whenever it changes, for a person, a script or a test to read."""

from __future__ import annotations

import contextlib
import fcntl
import os
from datetime import UTC, datetime
from pathlib import Path

import orjson

from stream_worker.up.options import UpError


def write(path: Path, state: str, fields: dict[str, object]) -> None:
    document = {"state": state, "pid": os.getpid(), "updated_at": datetime.now(UTC).isoformat(), **fields}
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    os.replace(partial, path)


def read(path: Path) -> dict[str, object]:
    return orjson.loads(path.read_bytes())  # type: ignore[no-any-return]


class DataDirLock:
    """One `up` per data directory: two would share the broker's files and the database."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._file = path.open("a+")

    def acquire(self) -> None:
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.seek(0)
            holder = self._file.read().strip() or "another process"
            self._file.close()
            raise UpError(
                f"{self._path.parent} is in use by another `stream-worker up` (pid {holder}); "
                "stop it, or give this one another --data-dir"
            ) from None
        self._file.seek(0)
        self._file.truncate()
        self._file.write(str(os.getpid()))
        self._file.flush()

    def release(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._file.close()
