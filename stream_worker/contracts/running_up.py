"""Where a running `stream-worker up` is, so that the CLI reaches its broker and its store without
flags: `up` writes a pointer to its `<data dir>/up.json` in `$XDG_STATE_HOME/stream-worker/up.json`
(default ~/.local/state) and removes it when it stops; `STREAM_WORKER_UP` (a data directory) points
elsewhere. A pointer whose `up` is gone (stopped, killed: its pid no longer runs) is ignored.

Explicit flags and environment variables always win: this is only the default.

`up` also writes `<data dir>/console.token` (CONSOLE_TOKEN_FILE): a random token, new on each start,
mode 0600, removed when it stops, that its console accepts as a read-only viewer of its API (GET
/api/...), so that `cameras status` asks the console's followed view instead of reading the topic.
Whoever reads the file can read the data dir, the database included: it grants nothing more.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

ENV = "STREAM_WORKER_UP"
STATUS_FILE = "up.json"
CONSOLE_TOKEN_FILE = "console.token"
MAX_TOKEN_CHARS = 256


@dataclass(frozen=True, slots=True)
class RunningUp:
    data_dir: Path
    bootstrap_servers: str
    console_url: str | None


def pointer_path() -> Path:
    state_home = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state_home) / "stream-worker" / STATUS_FILE


def write_pointer(status_path: Path) -> None:
    """Point the CLI at this `up` (its status file); best effort, like every default."""
    path = pointer_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    partial.write_bytes(orjson.dumps({"status": str(status_path), "pid": os.getpid()}))
    os.replace(partial, path)


def remove_pointer(status_path: Path) -> None:
    """Remove the pointer if it still points at this `up` (another may have started since)."""
    path = pointer_path()
    try:
        if orjson.loads(path.read_bytes()).get("status") == str(status_path):
            path.unlink()
    except (OSError, orjson.JSONDecodeError, AttributeError):
        pass


def running_up() -> RunningUp | None:
    """The `up` the CLI should reach by default, if one runs."""
    explicit = os.environ.get(ENV)
    if explicit:
        return _read_status(Path(explicit).expanduser() / STATUS_FILE)
    try:
        status = orjson.loads(pointer_path().read_bytes()).get("status")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    return _read_status(Path(status)) if isinstance(status, str) else None


def _read_status(path: Path) -> RunningUp | None:
    try:
        status = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(status, dict) or status.get("state") != "running" or not _alive(status.get("pid")):
        return None
    bootstrap, data_dir = status.get("bootstrap_servers"), status.get("data_dir")
    if not isinstance(bootstrap, str) or not isinstance(data_dir, str):
        return None
    console = status.get("console_url")
    return RunningUp(Path(data_dir), bootstrap, console if isinstance(console, str) else None)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_console_token(data_dir: Path) -> Path:
    """A new random token in `<data dir>/console.token`, readable by its owner only (0600), made
    under a temporary name and moved in place: no reader ever sees a half-written one."""
    import secrets  # here: `cameras status`, which only reads the token, starts faster without it

    path = data_dir / CONSOLE_TOKEN_FILE
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(secrets.token_urlsafe(32) + "\n")
    os.replace(partial, path)
    return path


def remove_console_token(data_dir: Path) -> None:
    (data_dir / CONSOLE_TOKEN_FILE).unlink(missing_ok=True)


def read_token(path: Path) -> str | None:
    """The token a file holds; None when it is missing, unreadable, empty or not a token."""
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token if 0 < len(token) <= MAX_TOKEN_CHARS and token.isprintable() and " " not in token else None
