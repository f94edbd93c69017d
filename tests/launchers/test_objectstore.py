"""The local object store behind the durable broker: the S3 semantics Tansu relies on."""

from __future__ import annotations

import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from stream_worker.launchers import objectstore
from stream_worker.launchers.objectstore import ObjectStore, StoreServer, list_page
from stream_worker.launchers.ports import free_port


@pytest.fixture
def store_url(tmp_path: Path) -> Iterator[str]:
    server = StoreServer(free_port(), ObjectStore(tmp_path))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/bucket"
    server.shutdown()
    server.server_close()


def _request(
    url: str, method: str = "GET", body: bytes | None = None, **headers: str
) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_conditional_puts_create_once_and_update_only_the_version_read(store_url: str) -> None:
    url = f"{store_url}/clusters/c/watermark.json"
    status, headers, _ = _request(url, "PUT", b"1", **{"If-None-Match": "*"})
    assert status == 200
    first = headers["ETag"]
    assert _request(url, "PUT", b"2", **{"If-None-Match": "*"})[0] == 412  # exists
    status, headers, _ = _request(url, "PUT", b"2", **{"If-Match": first})
    assert status == 200 and headers["ETag"] != first
    assert _request(url, "PUT", b"3", **{"If-Match": first})[0] == 412  # a stale version loses
    status, headers, body = _request(url)
    assert (status, body) == (200, b"2") and "Last-Modified" in headers
    assert _request(url, **{"If-None-Match": headers["ETag"]})[0] == 304
    assert _request(f"{store_url}/missing")[0] == 404


def _page(
    store: ObjectStore, prefix: str, delimiter: str, after: str
) -> tuple[list[str], list[str], str | None]:
    objects, prefixes, token = list_page(store, "bucket", prefix, delimiter, after)
    return [key for key, _ in objects], prefixes, token


def test_list_pages_by_prefix_and_delimiter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ObjectStore(tmp_path)
    for key in ["t/a.json", "t/a/0.batch", "t/a/1.batch", "t/b/0.batch", "t/c.json", "u.json"]:
        store.put(f"bucket/{key}", b"x", None, None)
    store.put("other/t/d.json", b"x", None, None)
    assert _page(store, "t/", "/", "") == (["t/a.json", "t/c.json"], ["t/a/", "t/b/"], None)
    monkeypatch.setattr(objectstore, "LIST_PAGE", 2)
    assert _page(store, "t/", "", "") == (["t/a.json", "t/a/0.batch"], [], "t/a/0.batch")
    assert _page(store, "t/", "", "t/a/0.batch") == (["t/a/1.batch", "t/b/0.batch"], [], "t/b/0.batch")
    assert _page(store, "t/", "", "t/b/0.batch") == (["t/c.json"], [], None)
    store.delete("bucket/t/c.json")
    assert _page(store, "t/", "", "t/b/0.batch") == ([], [], None)
    assert _page(ObjectStore(tmp_path), "", "/", "") == (["u.json"], ["t/"], None)  # the index rebuilt


def test_a_write_cut_short_leaves_nothing_behind_and_names_stay_inside(tmp_path: Path) -> None:
    leftover = tmp_path / "bucket" / "t" / f"{objectstore.TEMP_PREFIX}a.json-1"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"half")
    store = ObjectStore(tmp_path)
    assert not leftover.exists() and store.listing("bucket", "", "") == []
    with pytest.raises(ValueError, match="bad object name"):
        store.put("bucket/../../outside", b"x", None, None)


def test_every_write_is_listed_later_than_the_one_before_even_after_a_restart(store_url: str) -> None:
    # Tansu's high watermark is the batch listed with the latest LastModified: ties hide records.
    for offset in range(20):
        _request(f"{store_url}/records/{offset:020}.batch", "PUT", b"x")
    listing = _request(f"{store_url}?list-type=2&prefix=records/")[2].decode()
    times = re.findall(r"<LastModified>([^<]+)</LastModified>", listing)
    assert len(times) == 20 and times == sorted(times) and len(set(times)) == 20


def test_the_write_clock_resumes_after_the_latest_object(tmp_path: Path) -> None:
    path = tmp_path / "bucket" / "a"
    path.parent.mkdir()
    path.write_bytes(b"x")
    future_ns = time.time_ns() + 3600 * 10**9  # a file written by a clock that ran ahead
    os.utime(path, ns=(future_ns, future_ns))
    store = ObjectStore(tmp_path)
    store.put("bucket/b", b"y", None, None)
    assert (tmp_path / "bucket" / "b").stat().st_mtime_ns > future_ns
