"""CSV import and export of the watch list: all rows checked first, every bad row named."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.spreadsheet import quoted, unquoted
from stream_worker.watchlists.csvfile import (
    COLUMNS,
    CsvImportError,
    RowProblem,
    parse_csv,
    write_csv,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HEADER = "plate,list,label,max_distance,expires_at\n"


def _problems(text: str) -> list[RowProblem]:
    with pytest.raises(CsvImportError) as caught:
        parse_csv(text, NOW)
    return caught.value.problems


def test_parse_a_good_file() -> None:
    text = (
        HEADER + "B840CK197,stolen,grey van,0.5,2027-01-01T00:00:00Z\n"
        "в 001 ав 77,residents,,,\n"
        '"A123BC77",stolen,"Smith, J.",0,2026-12-31\n'
    )
    entries = parse_csv(text, NOW)
    assert [(e.plate, e.list, e.label, e.max_distance, e.expires_at) for e in entries] == [
        ("B840CK197", "stolen", "grey van", 0.5, datetime(2027, 1, 1, tzinfo=UTC)),
        ("B001AB77", "residents", None, None, None),
        ("A123BC77", "stolen", "Smith, J.", 0.0, datetime(2026, 12, 31, tzinfo=UTC)),
    ]
    assert all(entry.added_at == NOW for entry in entries)


def test_columns_in_any_order_optional_ones_may_be_left_out() -> None:
    (entry,) = parse_csv("LIST, Plate\nstolen,B840CK197\n", NOW)
    assert (entry.plate, entry.list, entry.label) == ("B840CK197", "stolen", None)


def test_a_byte_order_mark_blank_lines_and_crlf_are_fine() -> None:
    entries = parse_csv("\ufeffplate,list\r\n\r\nB840CK197,stolen\r\n,\r\nA123BC77,stolen\r\n", NOW)
    assert [entry.plate for entry in entries] == ["B840CK197", "A123BC77"]


def test_header_only_is_no_entries() -> None:
    assert parse_csv(HEADER, NOW) == []


def test_one_broken_row_refuses_the_whole_file_naming_it() -> None:
    text = HEADER + "B840CK197,stolen,,,\nA123BC7777,stolen,,,\nA123BC77,stolen,,,\n"
    assert [problem.row for problem in _problems(text)] == [3]


def test_every_bad_row_is_named_with_its_reason() -> None:
    text = (
        HEADER
        + "B840CK197,stolen,,,\n"  # row 2: fine
        + "A123BC7777,stolen,,,\n"  # row 3
        + "A123BC77,Stolen Cars,,,\n"  # row 4
        + "A123BC78,stolen,,-1,\n"  # row 5
        + "A123BC79,stolen,,,someday\n"  # row 6
        + "A123BC80,stolen,,,2020-01-01\n"  # row 7
        + "A123BC81,stolen\n"  # row 8: too few cells
        + "b-840-ck-197,residents,,,\n"  # row 9: row 2's plate in another spelling
        + "A123ЖC77,,,,\n"  # row 10: two problems
    )
    problems = {problem.row: problem.reason for problem in _problems(text)}
    assert sorted(problems) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert "'A123BC7777' has 10 characters" in problems[3]
    assert "list 'Stolen Cars' is not a lowercase slug" in problems[4]
    assert "max_distance -1.0 is not a finite number >= 0" in problems[5]
    assert "expires_at 'someday' is not an ISO-8601" in problems[6]
    assert "already past" in problems[7]
    assert "2 cells, the header has 5" in problems[8]
    assert "B840CK197 is already on row 2" in problems[9]
    assert "'Ж'" in problems[10] and "list ''" in problems[10]


def test_the_error_message_lists_each_row() -> None:
    with pytest.raises(CsvImportError) as caught:
        parse_csv(HEADER + "A123BC7777,stolen,,,\nB840CK197,STOLEN,,,\n", NOW)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("row 2: plate 'A123BC7777'") and lines[1].startswith("row 3: list 'STOLEN'")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no header row"),
        ("\n\n", "no header row"),
        ("B840CK197,stolen\n", "the first row must be the header"),
        ("plate,list,colour\nB840CK197,stolen,grey\n", "unknown column(s) 'colour'"),
        ("plate,list,plate\n", "column(s) 'plate' named twice"),
        ("plate,label\nB840CK197,x\n", "missing column(s) 'list'"),
    ],
)
def test_a_bad_header_refuses_the_file_as_row_1(text: str, reason: str) -> None:
    problems = _problems(text)
    assert {problem.row for problem in problems} == {1}
    assert any(reason in problem.reason for problem in problems)


def test_export_then_import_round_trips() -> None:
    entries = [
        WatchEntry(plate="X001XX99", list="stolen", added_at=NOW),
        WatchEntry(
            plate="B840CK197",
            list="stolen",
            label='grey van, "dented"',
            max_distance=1.5,
            expires_at=datetime(2027, 1, 1, 6, 30, tzinfo=UTC),
            added_at=NOW,
        ),
        WatchEntry(
            plate="A123BC77",
            list="residents",
            max_distance=0,
            added_at=NOW,
            kind=WatchKind.ALLOW,
            overstay_s=0,
        ),
    ]
    out = io.StringIO()
    write_csv(entries, out)
    text = out.getvalue()
    assert text.splitlines()[0] == ",".join(COLUMNS)
    assert text.splitlines()[1:] == [
        "A123BC77,residents,,0,,allow,0",
        'B840CK197,stolen,"grey van, ""dented""",1.5,2027-01-01T06:30:00Z,watch,',
        "X001XX99,stolen,,,,watch,",
    ]
    assert sorted(parse_csv(text, NOW), key=lambda e: e.plate) == sorted(entries, key=lambda e: e.plate)


def test_the_kind_column_makes_allow_entries_and_is_optional() -> None:
    text = "plate,list,kind\nA123BC77,residents,allow\nB840CK197,stolen,WATCH\nX001XX99,stolen,\n"
    entries = parse_csv(text, NOW)
    assert [(entry.plate, entry.effective_kind) for entry in entries] == [
        ("A123BC77", WatchKind.ALLOW),
        ("B840CK197", WatchKind.WATCH),
        ("X001XX99", WatchKind.WATCH),
    ]
    assert [entry.kind for entry in entries] == [WatchKind.ALLOW, None, None]  # watch: the old record
    (old,) = parse_csv("plate,list,label,max_distance,expires_at\nB840CK197,stolen,,,\n", NOW)
    assert old.kind is None  # a file from before the column: as it imported then


def test_the_overstay_column_is_the_plates_visit_limit_and_is_optional() -> None:
    text = "plate,list,overstay_s\nA123BC77,deliveries,1800\nB840CK197,residents,0\nX001XX99,stolen,\n"
    assert [entry.overstay_s for entry in parse_csv(text, NOW)] == [1800.0, 0.0, None]
    problems = _problems("plate,list,overstay_s\nA123BC77,deliveries,-5\nB840CK197,residents,soon\n")
    assert [(problem.row, problem.reason) for problem in problems] == [
        (2, "overstay_s -5.0 is not a number of seconds from 0 to 31622400"),
        (3, "overstay_s 'soon' is not a number"),
    ]


def test_an_unknown_kind_refuses_the_file_naming_the_row() -> None:
    problems = _problems("plate,list,kind\nA123BC77,residents,allow\nB840CK197,stolen,block\n")
    assert [(problem.row, problem.reason) for problem in problems] == [
        (3, "kind 'block' is not watch or allow")
    ]


@pytest.mark.parametrize(
    "cell", ["=1+1", "+1", "-1", "@A1", "\tx", "\rx", "'", "'=x", "''", "plain", "", "a=b", "1-2"]
)
def test_a_cell_a_spreadsheet_would_run_is_written_quoted_and_read_back_as_it_was(cell: str) -> None:
    written = quoted(cell)
    assert not written.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert written == ("'" + cell if cell.startswith(("=", "+", "-", "@", "\t", "\r", "'")) else cell)
    assert unquoted(written) == cell
