"""The local viewer token (`up`'s `<data dir>/console.token`, the store's --viewer-token-file): it
reads the API as a viewer and does nothing else (every write, every page, the admin's reads
refused); a wrong one, or one the console was not given, is 401; it is never logged or echoed.
The real app over a real SQLite store (conftest.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from store_records import FAKE_JPEG, plate_alert, plate_sighting

from stream_worker.contracts import running_up
from stream_worker.store.web.auth import is_public

from .conftest import TOKENS, Console, make_console
from .test_auth import routes, write_routes


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return running_up.write_console_token(tmp_path)


@pytest.fixture
def with_token(tmp_path: Path, users_file: Path, token_file: Path) -> Iterator[Console]:
    console = make_console(tmp_path, users_file, viewer_token_file=token_file)
    console.write(
        [plate_sighting("s1", "B840OK197", picture=FAKE_JPEG)],
        [plate_alert("a1", "B840OK197", sighting="s1")],
    )
    yield console
    console.close()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_the_token_reads_the_api_as_a_viewer_and_nothing_else(
    with_token: Console, token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = running_up.read_token(token_file)
    assert token is not None
    client = TestClient(with_token.app, headers=bearer(token), follow_redirects=False)
    assert client.get("/api/me").json() == {"name": "local-viewer", "role": "viewer"}
    assert client.get("/api/sightings", params={"text": "B840OK197"}).json()["items"]
    answers = []
    for method, path in write_routes(with_token.app):
        for body in ({"json": {}}, {"data": {"csrf_token": "x"}}):
            answer = client.request(method, path, **body)
            assert answer.status_code == 403, (method, path, answer.status_code)
            assert answer.json()["detail"] == "the local viewer token reads the API only (GET /api/...)"
            answers.append(answer)
    pages = [
        path for method, path in routes(with_token.app) if method == "GET" and not path.startswith("/api/")
    ]
    for path in (path for path in pages if not is_public(path)):
        answer = client.get(path, headers={"accept": "text/html"})
        assert answer.status_code == 403, (path, answer.status_code)
        answers.append(answer)
    answers.append(client.post("/logout"))
    assert answers[-1].status_code == 403
    assert client.get("/api/audit").status_code == 403  # an admin's read
    # Nothing changed: the alert is still to acknowledge, no audit row.
    admin = TestClient(with_token.app, headers=bearer(TOKENS["ada"]))
    assert admin.get("/api/alerts", params={"acknowledged": "false"}).json()["items"]
    assert admin.get("/api/audit").json() == []
    assert not [answer for answer in answers if token.encode() in answer.content]
    assert token not in caplog.text


def test_a_wrong_token_or_one_the_console_was_not_given_is_401(
    tmp_path: Path, users_file: Path, with_token: Console, token_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = running_up.read_token(token_file)
    assert token is not None
    client = TestClient(with_token.app, follow_redirects=False)
    same_length = ("A" if token[0] != "A" else "B") + token[1:]
    for wrong in (same_length, token + "x", token[:-1], "", f"{token} {token}"):
        assert client.get("/api/me", headers=bearer(wrong)).status_code == 401, wrong
    assert client.get("/api/me", headers={"authorization": f"Basic {token}"}).status_code == 401
    # A console not given the file does not know the token; an empty or missing file gives none.
    empty = tmp_path / "empty.token"
    empty.write_text("\n")
    for given in (None, empty, tmp_path / "missing.token"):
        data_dir = tmp_path / f"c-{given.name if given else 'none'}"
        data_dir.mkdir()
        other = make_console(data_dir, users_file, viewer_token_file=given)
        try:
            answer = TestClient(other.app).get("/api/me", headers=bearer(token))
            assert answer.status_code == 401, given
            assert TestClient(other.app).get("/api/me", headers=bearer("")).status_code == 401
        finally:
            other.close()
    assert "no viewer token in the viewer token file" in caplog.text
    assert token not in caplog.text


def test_the_token_file_is_new_on_each_write_readable_by_its_owner_only_and_removed(tmp_path: Path) -> None:
    first = running_up.read_token(running_up.write_console_token(tmp_path))
    path = running_up.write_console_token(tmp_path)
    second = running_up.read_token(path)
    assert first and second and first != second and len(second) >= 40
    assert path == tmp_path / running_up.CONSOLE_TOKEN_FILE
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [running_up.CONSOLE_TOKEN_FILE]  # no partial file left
    running_up.remove_console_token(tmp_path)
    assert not path.exists()
    running_up.remove_console_token(tmp_path)  # already gone: nothing to do
    for text in ("", "two words", "x" * 300, "\x00bad"):
        path.write_text(text)
        assert running_up.read_token(path) is None, text
