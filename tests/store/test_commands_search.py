"""`stream-worker search` as typed: options to the query, the database from --data-dir or
--database-url, the output and exit codes (the root app, a real SQLite store)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from store_records import FAKE_JPEG, T0, plate_sighting, plate_visit, sighting_id, stored_in
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.store.database import default_url


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return stored_in(
        tmp_path,
        [
            plate_sighting("van", "B840OK197", T0, zone="lane-1", picture=FAKE_JPEG),
            plate_sighting(
                "later", "B840CK197", T0 + timedelta(hours=1), camera_id="yard", direction="receding"
            ),
            plate_sighting("old", "B840CK197", T0 - timedelta(days=30)),
        ],
        visits=[
            plate_visit("in", "B840OK197", entered_at=T0),
            plate_visit("in", "B840OK197", "closed", dwell=timedelta(hours=2, minutes=5)),
            plate_visit("now", "B840CK197", entered_at=T0 + timedelta(hours=3), site="yard"),
        ],
    )


def _search(*args: str) -> tuple[int, list[str], str]:
    result = CliRunner().invoke(app, ["search", *args])
    return result.exit_code, result.stdout.splitlines(), result.stderr


def _ids(lines: list[str]) -> list[str]:
    return [orjson.loads(line)["sighting_id"] for line in lines]


def test_fuzzy_by_default_newest_first(data_dir: Path) -> None:
    code, lines, _ = _search("B840CK197", "--data-dir", str(data_dir), "--json")
    assert code == 0
    assert _ids(lines) == [sighting_id("later"), sighting_id("van"), sighting_id("old")]


def test_exact_camera_direction_and_times(data_dir: Path) -> None:
    directory = str(data_dir)
    assert _ids(_search("B840CK197", "--exact", "--data-dir", directory, "--json")[1]) == [
        sighting_id("later"),
        sighting_id("old"),
    ]
    assert _ids(_search("B840CK197", "--camera", "yard", "--data-dir", directory, "--json")[1]) == [
        sighting_id("later")
    ]
    assert _ids(_search("B840CK197", "--direction", "receding", "--data-dir", directory, "--json")[1]) == [
        sighting_id("later")
    ]
    assert _ids(_search("B840CK197", "--zone", "lane-1", "--data-dir", directory, "--json")[1]) == [
        sighting_id("van")
    ]
    window = ["--since", "2026-03-01T11:00", "--until", "2026-03-01T13:00:01+00:00"]
    assert _ids(_search("B840CK197", *window, "--data-dir", directory, "--json")[1]) == [
        sighting_id("later"),
        sighting_id("van"),
    ]
    assert (
        _search("B840CK197", "--since", "1h", "--data-dir", directory)[0] == 1
    )  # the sightings are in the past


def test_max_distance_and_pages(data_dir: Path) -> None:
    code, lines, _ = _search("B840CK197", "--max-distance", "0", "--data-dir", str(data_dir), "--json")
    assert code == 0 and len(lines) == 2
    code, lines, err = _search("B840CK197", "--limit", "1", "--data-dir", str(data_dir))
    assert code == 0 and len(lines) == 2  # the header and one row
    cursor = err.split("--cursor ")[1].strip()
    code, lines, _ = _search(
        "B840CK197", "--limit", "1", "--cursor", cursor, "--data-dir", str(data_dir), "--json"
    )
    assert _ids(lines) == [sighting_id("van")]


def test_the_database_url_option_and_its_env_variable(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = default_url(data_dir)
    assert _search("B840OK197", "--exact", "--database-url", url)[0] == 0
    monkeypatch.setenv("STREAM_WORKER_STORE_DATABASE_URL", url)
    assert _search("B840OK197", "--exact")[0] == 0


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--since", "yesterday"], 2, "error: --since: "),
        (["--limit", "500"], 2, "error: limit: "),
        (["--direction", "up"], 2, "error: direction: "),
        (["--max-distance", "2"], 2, "error: max_distance: "),
        (["--cursor", "nonsense"], 2, "error: cursor: "),
    ],
)
def test_bad_options_exit_2(data_dir: Path, args: list[str], code: int, said: str) -> None:
    result = _search("B840CK197", *args, "--data-dir", str(data_dir))
    assert result[0] == code and result[1] == []
    assert result[2].startswith(said)


def test_a_missing_store_exits_3(tmp_path: Path) -> None:
    code, lines, err = _search("B840CK197", "--data-dir", str(tmp_path / "none"))
    assert (code, lines) == (3, [])
    assert "no history store at" in err


def test_visits_newest_entry_first_with_their_dwell(data_dir: Path) -> None:
    directory = str(data_dir)
    code, lines, _ = _search("--visits", "B840CK197", "--data-dir", directory)
    assert code == 0
    header, now, closed = lines
    assert header.split()[:6] == ["ENTERED", "(UTC)", "SITE", "PLATE", "DIST", "ENTRY"]
    assert "DWELL" in header and "ENDED BY" in header
    assert now.split()[2:6] == ["yard", "B840CK197", "0", "gate"] and "on site" in now
    assert closed.split()[2:4] == ["depot", "B840OK197"] and "2 h 05 min" in closed and "exit" in closed
    code, lines, _ = _search("--visits", "--site", "depot", "--json", "--data-dir", directory)
    [visit] = [orjson.loads(line) for line in lines]
    assert (visit["plate"], visit["dwell_s"], visit["ended_by"]) == ("B840OK197", 7500.0, "exit")
    assert visit["entry_sighting_id"] == sighting_id("in")
    code, lines, _ = _search("--visits", "--state", "on-site", "--json", "--data-dir", directory)
    assert [orjson.loads(line)["site"] for line in lines] == ["yard"]
    window = ["--since", "2026-03-01T12:00", "--until", "2026-03-01T15:00"]
    code, lines, _ = _search("--visits", *window, "--json", "--data-dir", directory)
    assert [orjson.loads(line)["plate"] for line in lines] == ["B840OK197"]  # until is exclusive
    code, lines, err = _search("--visits", "X999XX99", "--data-dir", directory)
    assert (code, lines, err.strip()) == (1, [], "no visit found")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--visits", "--zone", "lane-1"], "error: --zone applies to sightings (without --visits)"),
        (["--visits", "--direction", "left"], "error: --direction applies to sightings"),
        (["--site", "depot"], "error: --site applies to --visits"),
        (["--state", "closed"], "error: --state applies to --visits"),
        (["--visits", "--state", "gone"], "error: state: "),
    ],
)
def test_options_of_the_other_search_exit_2(data_dir: Path, args: list[str], said: str) -> None:
    code, lines, err = _search(*args, "--data-dir", str(data_dir))
    assert (code, lines) == (2, []) and err.startswith(said), err
