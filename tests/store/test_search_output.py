"""`stream-worker search`'s work on a real SQLite file: times from the command line, the table,
JSON lines, the next page's cursor and the exit codes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from store_records import FAKE_JPEG, T0, plate_sighting, sighting_id

from stream_worker.store.database import Database
from stream_worker.store.search_output import FOUND, INVALID, NOTHING_FOUND, UNREACHABLE, parse_time, run
from stream_worker.store.writer import write_batch

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", NOW - timedelta(seconds=90)),
        ("15m", NOW - timedelta(minutes=15)),
        ("2h", NOW - timedelta(hours=2)),
        ("1.5d", NOW - timedelta(hours=36)),
        ("2w", NOW - timedelta(days=14)),
        ("7D", NOW - timedelta(days=7)),
        ("2026-03-01T10:00:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("2026-03-01T13:00:00+03:00", datetime(2026, 3, 1, 10, tzinfo=UTC)),
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
    ],
)
def test_times_are_iso_or_a_span_back_from_now(text: str, expected: datetime) -> None:
    parsed = parse_time(text, NOW)
    assert parsed == expected
    assert parsed.tzinfo is not None and parsed.utcoffset() == UTC.utcoffset(None)


@pytest.mark.parametrize("text", ["yesterday", "15", "m", "-2h", "2026-13-01"])
def test_other_times_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_time(text, NOW)


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/history.db"
    database = Database(url)
    database.migrate()
    with database.begin() as connection:
        write_batch(
            connection,
            [
                plate_sighting("van", "B840OK197", T0, zone="lane-1", picture=FAKE_JPEG),
                plate_sighting(
                    "again", "B840CK197", T0 + timedelta(minutes=5), camera_id="yard", direction=None
                ),
                plate_sighting("other", "A123BC77", T0 + timedelta(minutes=9)),
            ],
            [],
        )
    database.dispose()
    return url


class Printed:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.err: list[str] = []


def _run(url: str, fields: dict[str, object], as_json: bool = False) -> tuple[int, Printed]:
    printed = Printed()
    code = run(url, fields, as_json, printed.out.append, printed.err.append)
    return code, printed


def test_a_table_newest_first_with_the_distance(url: str) -> None:
    code, printed = _run(url, {"text": "\u0432840\u0441\u043a197", "fuzzy": True})
    assert code == FOUND and printed.err == []
    header, *lines = "\n".join(printed.out).splitlines()
    assert header.split()[:4] == ["LAST", "SEEN", "(UTC)", "CAMERA"]
    assert [line.split()[3] for line in lines] == ["B840CK197", "B840OK197"]
    assert lines[0].split()[:5] == ["2026-03-01", "12:05:00", "yard", "B840CK197", "0"]
    assert lines[1].split()[3:9] == ["B840OK197", "0.5", "approaching", "lane-1", "6", "0.91"]
    assert lines[1].split()[9:] == ["yes", sighting_id("van")]
    assert lines[0].split()[5:7] == ["-", "-"]  # no direction, no zone


def test_json_lines_one_object_per_sighting(url: str) -> None:
    code, printed = _run(url, {"text": "B840CK197", "fuzzy": False}, as_json=True)
    assert code == FOUND
    assert len(printed.out) == 1
    row = orjson.loads(printed.out[0])
    assert row["sighting_id"] == sighting_id("again")
    assert row["last_seen"] == "2026-03-01T12:05:00Z"
    assert row["distance"] == 0.0 and row["has_picture"] is False


def test_the_next_page_is_said_on_stderr(url: str) -> None:
    code, printed = _run(url, {"text": "B840CK197", "limit": 1})
    assert code == FOUND and len(printed.out[0].splitlines()) == 2
    assert len(printed.err) == 1 and printed.err[0].startswith("more: add --cursor ")
    cursor = printed.err[0].split()[-1]
    code, printed = _run(url, {"text": "B840CK197", "limit": 1, "cursor": cursor}, as_json=True)
    assert code == FOUND and printed.err == []
    assert orjson.loads(printed.out[0])["sighting_id"] == sighting_id("van")


def test_nothing_found_exits_1(url: str) -> None:
    code, printed = _run(url, {"text": "X999XX99"})
    assert (code, printed.out, printed.err) == (NOTHING_FOUND, [], ["no sighting found"])
    code, printed = _run(url, {"text": "X999XX99"}, as_json=True)
    assert (code, printed.out, printed.err) == (NOTHING_FOUND, [], [])


def test_an_invalid_query_exits_2_naming_the_field(url: str) -> None:
    code, printed = _run(url, {"text": "B840CK197", "limit": 500})
    assert code == INVALID and printed.out == []
    assert printed.err[0].startswith("error: limit: ")


def test_a_missing_or_empty_database_exits_3_and_is_not_created(tmp_path: Path) -> None:
    code, printed = _run(f"sqlite:///{tmp_path}/none/history.db", {"text": "B840CK197"})
    assert code == UNREACHABLE
    assert printed.err == [
        f"error: no history store at {tmp_path}/none/history.db (the store creates it: stream-worker store)"
    ]
    assert not (tmp_path / "none").exists()
    (tmp_path / "empty.db").touch()
    code, printed = _run(f"sqlite:///{tmp_path}/empty.db", {"text": "B840CK197"})
    assert code == UNREACHABLE
    assert len(printed.err) == 1
    assert printed.err[0].startswith(f"error: cannot search sqlite:///{tmp_path}/empty.db: no such table: ")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://store:s3cret-pw@127.0.0.1:1/history",
        "mysql://store:s3cret-pw@db/history",
        "nonsense",
    ],
)
def test_an_unreachable_or_foreign_database_exits_3_without_the_password(url: str) -> None:
    code, printed = _run(url, {"text": "B840CK197"})
    assert code == UNREACHABLE
    assert len(printed.err) == 1 and printed.err[0].startswith("error: ")
    assert "s3cret-pw" not in printed.err[0]
