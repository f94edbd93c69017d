"""The watch list as CSV, for `stream-worker watchlist import` and `export`.

Columns `plate,list,label,max_distance,expires_at,kind,overstay_s` (a header row names them; only
`plate` and `list` are required, in any order; `kind` is `watch` or `allow`, blank or absent:
`watch`, so the files written before the column existed import as they did; `overstay_s` is the
plate's own visit limit for the visits service, blank: none). An import is all or nothing: every
row is checked first and one bad row refuses the file, with every bad row's number and reason, so
that a half-imported list never exists. Row numbers count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO

from stream_worker.contracts.watchlist import WatchEntry, WatchKind, new_entry
from stream_worker.spreadsheet import quoted, unquoted

COLUMNS = ("plate", "list", "label", "max_distance", "expires_at", "kind", "overstay_s")
REQUIRED_COLUMNS = ("plate", "list")


@dataclass(frozen=True, slots=True)
class RowProblem:
    row: int  # 1 = the header
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}: {self.reason}"


class CsvImportError(ValueError):
    """The file is refused as a whole; `problems` lists every bad row (row 1 for the header)."""

    def __init__(self, problems: list[RowProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(problem) for problem in problems))


def parse_csv(text: str, now: datetime | None = None) -> list[WatchEntry]:
    """The entries of a CSV file's text, all added `now`; CsvImportError naming every bad row.
    Blank lines are ignored; a plate listed twice (in any spelling) is an error on the later row."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""))
    header = next(reader, None)
    if header is None or not any(cell.strip() for cell in header):
        raise CsvImportError([RowProblem(1, f"no header row (expected {','.join(COLUMNS)})")])
    names = [cell.strip().lower() for cell in header]
    header_problems = _header_problems(names)
    if header_problems:
        raise CsvImportError([RowProblem(1, problem) for problem in header_problems])
    entries: list[WatchEntry] = []
    problems: list[RowProblem] = []
    first_row: dict[str, int] = {}
    for row_number, cells in enumerate(reader, start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(names):
            problems.append(RowProblem(row_number, f"{len(cells)} cells, the header has {len(names)}"))
            continue
        values = dict(zip(names, map(unquoted, cells), strict=True))
        try:
            entry = new_entry(
                values["plate"],
                values["list"],
                values.get("label"),
                values.get("max_distance"),
                values.get("expires_at"),
                now,
                _kind(values.get("kind")),
                values.get("overstay_s"),
            )
        except ValueError as error:
            problems.append(RowProblem(row_number, str(error)))
            continue
        except OverflowError:  # a date near year 1 or 9999 whose offset takes it off the calendar
            problem = f"expires_at {values.get('expires_at')!r} is out of range"
            problems.append(RowProblem(row_number, problem))
            continue
        if entry.plate in first_row:
            problems.append(
                RowProblem(row_number, f"{entry.plate} is already on row {first_row[entry.plate]}")
            )
            continue
        first_row[entry.plate] = row_number
        entries.append(entry)
    if problems:
        raise CsvImportError(problems)
    return entries


def _kind(cell: str | None) -> WatchKind:
    """A row's kind: blank (or no column) is `watch`; anything but `watch` or `allow` a ValueError."""
    text = (cell or "").strip().lower()
    if not text:
        return WatchKind.WATCH
    try:
        return WatchKind(text)
    except ValueError:
        known = " or ".join(kind.value for kind in WatchKind)
        raise ValueError(f"kind {cell!r} is not {known}") from None


def _header_problems(names: list[str]) -> list[str]:
    problems = []
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        problems.append(f"unknown column(s) {', '.join(map(repr, unknown))} (known: {','.join(COLUMNS)})")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"column(s) {', '.join(map(repr, repeated))} named twice")
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        problems.append(
            f"missing column(s) {', '.join(map(repr, missing))} (the first row must be the header)"
        )
    return problems


def write_csv(entries: Iterable[WatchEntry], out: TextIO) -> None:
    """Entries as `parse_csv` reads them back (header first), sorted by list, then plate; every
    cell `quoted`."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for entry in sorted(entries, key=lambda entry: (entry.list, entry.plate)):
        cells = [
            entry.plate,
            entry.list,
            entry.label or "",
            "" if entry.max_distance is None else f"{entry.max_distance:g}",
            "" if entry.expires_at is None else entry.expires_at.isoformat().replace("+00:00", "Z"),
            entry.effective_kind.value,
            "" if entry.overstay_s is None else f"{entry.overstay_s:g}",
        ]
        writer.writerow([quoted(cell) for cell in cells])
