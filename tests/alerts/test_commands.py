"""`stream-worker watchlist` on the real local broker: add, list, remove, import, export."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.watchlists.topic import read_watchlist

runner = CliRunner()
CLOSED = "127.0.0.1:9"  # nothing listens there
GOOD_CSV = (
    "plate,list,label,max_distance,expires_at\n"
    "B840CK197,stolen,grey van,0.5,2030-01-01T00:00:00Z\n"
    "в 001 ав 77,residents,,,\n"
)


def _watchlist(bootstrap: str, topic: str, *args: str):
    return runner.invoke(app, ["watchlist", *args, "--bootstrap-servers", bootstrap, "--topic", topic])


def _json_lines(output: str) -> list[dict]:
    return [orjson.loads(line) for line in output.splitlines()]


@pytest.mark.integration
def test_add_list_remove(kafka_bootstrap: str, unique_name: str) -> None:
    added = _watchlist(
        kafka_bootstrap,
        unique_name,
        "add",
        "в 840 ск 197",
        "--list",
        "stolen",
        "--label",
        "grey van",
        "--max-distance",
        "1",
        "--expires-at",
        "2030-01-01",
    )
    assert added.exit_code == 0, added.output
    assert added.stdout.strip() == "added B840CK197 to stolen"
    allowed = _watchlist(kafka_bootstrap, unique_name, "add", "A123BC77", "--list", "residents", "--allow")
    assert allowed.stdout.strip() == "added A123BC77 to residents (allow list)"

    listed = _watchlist(kafka_bootstrap, unique_name, "list", "--json")
    assert listed.exit_code == 0, listed.output
    resident, van = _json_lines(listed.stdout)  # by list, then plate: residents first
    assert (resident["plate"], resident["list"], resident["max_distance"]) == ("A123BC77", "residents", None)
    assert resident["kind"] == "allow" and "kind" not in van
    assert van["plate"] == "B840CK197" and van["label"] == "grey van" and van["max_distance"] == 1.0
    assert van["expires_at"] == "2030-01-01T00:00:00Z" and van["schema_version"] == 1

    table = _watchlist(kafka_bootstrap, unique_name, "list")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["PLATE", "LIST", "MAX_DISTANCE", "EXPIRES_AT", "LABEL"]
    assert lines[1].split() == ["A123BC77", "residents", "default", "-"]
    assert lines[2].split() == ["B840CK197", "stolen", "1", "2030-01-01T00:00:00Z", "grey", "van"]

    removed = _watchlist(kafka_bootstrap, unique_name, "remove", "b840ck197")
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.strip() == "removed B840CK197 from stolen"
    snapshot = read_watchlist(kafka_bootstrap, unique_name)
    assert list(snapshot.values) == ["A123BC77"]
    assert snapshot.records == 3  # two entries and the tombstone

    again = _watchlist(kafka_bootstrap, unique_name, "remove", "B840CK197")
    assert again.exit_code == 0 and "not on the watch list; nothing written" in again.stdout
    assert read_watchlist(kafka_bootstrap, unique_name).records == 3


@pytest.mark.integration
def test_import_then_export_round_trips(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    source = tmp_path / "plates.csv"
    source.write_text(GOOD_CSV, encoding="utf-8")
    imported = _watchlist(kafka_bootstrap, unique_name, "import", str(source))
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.strip() == "imported 2 entries into residents, stolen"

    exported = _watchlist(kafka_bootstrap, unique_name, "export")
    assert exported.exit_code == 0, exported.output
    assert exported.stdout.splitlines() == [  # GOOD_CSV has no kind column: both are watch entries
        "plate,list,label,max_distance,expires_at,kind,overstay_s",
        "B001AB77,residents,,,,watch,",
        "B840CK197,stolen,grey van,0.5,2030-01-01T00:00:00Z,watch,",
    ]
    # The export imports again as it is, into another topic, and exports the same.
    copy = tmp_path / "copy.csv"
    copy.write_text(exported.stdout, encoding="utf-8")
    assert _watchlist(kafka_bootstrap, f"{unique_name}-copy", "import", str(copy)).exit_code == 0
    assert _watchlist(kafka_bootstrap, f"{unique_name}-copy", "export").stdout == exported.stdout


@pytest.mark.integration
def test_a_bad_csv_writes_nothing_and_names_every_bad_row(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    source = tmp_path / "plates.csv"
    source.write_text(GOOD_CSV + "A123BC7777,stolen,,,\nA123BC77,Stolen,,,\n", encoding="utf-8")
    result = _watchlist(kafka_bootstrap, unique_name, "import", str(source))
    assert result.exit_code == 2
    assert "refused, nothing imported (2 bad row(s))" in result.stderr
    assert "row 4: plate 'A123BC7777'" in result.stderr and "row 5: list 'Stolen'" in result.stderr
    assert read_watchlist(kafka_bootstrap, unique_name).topic_exists is False


FORMULAS = {  # labels a spreadsheet would run as formulas (OWASP CSV injection)
    "A001AA77": "=cmd|' /C calc'!A0",
    "A002AA77": "+1+1",
    "A003AA77": "-2+3",
    "A004AA77": "@SUM(1,1)",
}


@pytest.mark.integration
def test_export_never_writes_a_cell_a_spreadsheet_runs(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    source = tmp_path / "plates.csv"
    rows = "".join(f'{plate},stolen,"{label}"\n' for plate, label in FORMULAS.items())
    source.write_text("plate,list,label\n" + rows, encoding="utf-8")
    assert _watchlist(kafka_bootstrap, unique_name, "import", str(source)).exit_code == 0
    exported = _watchlist(kafka_bootstrap, unique_name, "export")
    assert exported.exit_code == 0, exported.output
    labels = {row[0]: row[2] for row in csv.reader(exported.stdout.splitlines()[1:])}
    assert labels == {plate: "'" + label for plate, label in FORMULAS.items()}
    # The export imports back to the labels as they were.
    copy = tmp_path / "copy.csv"
    copy.write_text(exported.stdout, encoding="utf-8")
    assert _watchlist(kafka_bootstrap, f"{unique_name}-copy", "import", str(copy)).exit_code == 0
    entries = read_watchlist(kafka_bootstrap, f"{unique_name}-copy").values
    assert {plate: entry.label for plate, entry in entries.items()} == FORMULAS


@pytest.mark.integration
def test_list_and_export_of_a_missing_topic_are_empty(kafka_bootstrap: str, unique_name: str) -> None:
    listed = _watchlist(kafka_bootstrap, unique_name, "list", "--json")
    assert listed.exit_code == 0 and listed.stdout == ""
    assert "does not exist yet" in listed.stderr
    exported = _watchlist(kafka_bootstrap, unique_name, "export")
    assert exported.stdout == "plate,list,label,max_distance,expires_at,kind,overstay_s\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "A123BC7777", "--list", "stolen"), "plate 'A123BC7777' has 10 characters"),
        (("add", "B840CK197", "--list", "Stolen"), "list 'Stolen' is not a lowercase slug"),
        (("add", "B840CK197", "--list", "stolen", "--expires-at", "soon"), "expires_at 'soon'"),
        (("add", "B840CK197", "--list", "stolen", "--expires-at", "2020-01-01"), "already past"),
        (("remove", "A123BC7777"), "plate 'A123BC7777' has 10 characters"),
    ],
)
def test_bad_input_exits_2_before_any_broker_call(args: tuple[str, ...], message: str) -> None:
    result = _watchlist(CLOSED, "watchlist", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_negative_max_distance_is_a_usage_error() -> None:
    result = _watchlist(CLOSED, "watchlist", "add", "B840CK197", "--list", "stolen", "--max-distance", "-1")
    assert result.exit_code == 2


def test_import_of_a_bad_file_needs_no_broker(tmp_path: Path) -> None:
    source = tmp_path / "plates.csv"
    source.write_text("B840CK197,stolen\n", encoding="utf-8")
    result = _watchlist(CLOSED, "watchlist", "import", str(source))
    assert result.exit_code == 2 and "row 1:" in result.stderr


@pytest.mark.parametrize(
    "args", [("add", "B840CK197", "--list", "stolen"), ("remove", "B840CK197"), ("list",), ("export",)]
)
def test_an_unreachable_broker_exits_1(args: tuple[str, ...]) -> None:
    result = _watchlist(CLOSED, "watchlist", *args, "--timeout", "1")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")


def test_kafka_config_is_passed_to_the_client() -> None:
    result = _watchlist(CLOSED, "watchlist", "list", "--kafka-config", "no-equals-sign")
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output
