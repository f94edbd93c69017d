"""A report as a file: CSV (a header row, then the rows; every cell escaped against formula
injection, as the watch list's export is) or JSON Lines (one object per row, the columns as keys)."""

from __future__ import annotations

import csv
import io

import orjson

from stream_worker.spreadsheet import quoted
from stream_worker.store.reports import Report

FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl"}


def to_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(report.columns)
    for row in report.rows:
        writer.writerow([quoted("" if cell is None else str(cell)) for cell in row])
    return out.getvalue()


def to_jsonl(report: Report) -> bytes:
    return b"".join(orjson.dumps(dict(zip(report.columns, row, strict=True))) + b"\n" for row in report.rows)


def render(report: Report, file_format: str) -> bytes:
    """The report in `file_format` (csv or jsonl); ValueError for another format."""
    if file_format == "csv":
        return to_csv(report).encode()
    if file_format == "jsonl":
        return to_jsonl(report)
    raise ValueError(f"unknown format {file_format!r}: csv or jsonl")
