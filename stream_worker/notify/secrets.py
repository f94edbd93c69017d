"""The secrets a target may name as `${NAME}`: only those meant for targets, never the rest of the
notify service's environment (its database password, the broker's SASL login, a cloud key).

A name is looked up in the secrets file (`--secrets-file`: `NAME=value` lines, `#` comments),
then in the environment variable `STREAM_WORKER_SECRET_<NAME>`; no other variable is ever read, so
whoever edits the targets cannot make the service send one anywhere, nor learn whether it exists.
The file is read again when it changes (checked at most once a second, on use), so a secret is
added or rotated without a restart. It must be readable by its owner only (mode 0600): one that
the group or others may read is refused whole, the refusal logged, as if it held nothing.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from stream_worker.contracts.credentials import MissingCredential
from stream_worker.contracts.credentials import resolve as resolve_references

log = logging.getLogger(__name__)

ENV_PREFIX = "STREAM_WORKER_SECRET_"
CHECK_EVERY_S = 1.0
_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")


class MissingSecret(LookupError):
    """A `${NAME}` a target refers to is neither in the secrets file nor STREAM_WORKER_SECRET_NAME."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(
            f"secret(s) not set where notify runs: {', '.join(names)} (add them to its secrets file, "
            f"or set {ENV_PREFIX}<NAME>); deliveries are held until they are"
        )


def parse_secrets(text: str) -> tuple[dict[str, str], list[int]]:
    """(NAME -> value, the numbers of the lines that are neither `NAME=value`, a comment nor blank).
    The value is the rest of the line as written (spaces and quotes included), less its line end."""
    values: dict[str, str] = {}
    bad: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            bad.append(number)
            continue
        values[match.group(1)] = match.group(2)
    return values, bad


def file_problem(path: Path) -> str | None:
    """Why the secrets file cannot be used (missing, not a file, readable by others), or None."""
    try:
        info = path.stat()
    except OSError as error:
        return f"cannot read it: {error.strerror or error}"
    if not stat.S_ISREG(info.st_mode):
        return "is not a file"
    if info.st_mode & 0o077:
        return f"is readable by others (mode {stat.S_IMODE(info.st_mode):04o}): chmod 600 it"
    return None


class Secrets(Mapping[str, str]):
    """The target secrets by name, as a read-only mapping the senders resolve `${NAME}` from; safe to
    share between the lanes' threads (a reload swaps the whole mapping)."""

    def __init__(
        self,
        path: Path | None = None,
        environ: Mapping[str, str] = os.environ,
        check_every_s: float = CHECK_EVERY_S,
    ) -> None:
        self.path = path
        self._environ = environ
        self._check_every_s = check_every_s
        self._lock = threading.Lock()
        self._from_file: dict[str, str] = {}
        self._seen: tuple[int, int, int, int] | None = None  # the file's (inode, size, mtime, mode)
        self._checked_at = float("-inf")
        self.problem: str | None = None  # why the file is not used, if it is not
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> bool:
        """Read the file again if it changed (at most once per `check_every_s` unless `force`);
        whether what it holds changed."""
        if self.path is None:
            return False
        with self._lock:
            now = time.monotonic()
            if not force and now - self._checked_at < self._check_every_s:
                return False
            self._checked_at = now
            try:
                info = self.path.stat()
                seen: tuple[int, int, int, int] | None = (
                    info.st_ino,
                    info.st_size,
                    info.st_mtime_ns,
                    info.st_mode,
                )
            except OSError:
                seen = None
            if seen == self._seen and not force:
                return False
            self._seen = seen
            return self._load()

    def _load(self) -> bool:
        assert self.path is not None
        problem = file_problem(self.path)
        values: dict[str, str] = {}
        if problem is None:
            try:
                values, bad = parse_secrets(self.path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as error:
                problem = f"cannot read it: {type(error).__name__}"
            else:
                if bad:  # never the line itself: it may hold a secret
                    log.warning(
                        "secrets file: lines that are not NAME=value are ignored",
                        extra={"path": str(self.path), "lines": bad},
                    )
        if problem is not None and problem != self.problem:
            log.error(
                "secrets file refused: targets naming its secrets hold their deliveries",
                extra={"path": str(self.path), "problem": problem},
            )
        changed = values != self._from_file
        self.problem, self._from_file = problem, values
        if changed:
            log.info("secrets file read", extra={"path": str(self.path), "names": sorted(values)})
        return changed

    def __getitem__(self, name: str) -> str:
        self.refresh()
        value = self._from_file.get(name)
        if value is None:
            value = self._environ.get(ENV_PREFIX + name) if name else None
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def names(self) -> list[str]:
        """The names a target may refer to now (never their values)."""
        self.refresh()
        from_env = {key[len(ENV_PREFIX) :] for key in self._environ if key.startswith(ENV_PREFIX)}
        return sorted((set(self._from_file) | from_env) - {""})

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def resolve(text: str, secrets: Mapping[str, str]) -> tuple[str, list[str]]:
    """(`text` with its ${NAME}s replaced from `secrets`, the values to redact); MissingSecret names
    the ones not set."""
    try:
        return resolve_references(text, secrets)
    except MissingCredential as error:
        raise MissingSecret(error.names) from None


FILE_HEADER = """\
# The secrets notification targets name as ${NAME}: one NAME=value line each (the value is the
# rest of the line, as written). The notify service reads this file again when it changes; keep it
# readable by its owner only (chmod 600), or it is refused. Example:
# GATE_WEBHOOK_SECRET=...
"""


def create_secrets_file(path: Path) -> bool:
    """Create an empty secrets file (mode 0600, a header saying how to fill it) unless there is one;
    whether it was created."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(FILE_HEADER)
    return True
