"""Cells written to CSV files a spreadsheet may open (the watch list's export, the reports): a cell
starting like a formula is written as text, so opening a file never runs what a plate, label or
camera id smuggled in."""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def quoted(cell: str) -> str:
    """The cell as a spreadsheet shows it as text, never runs it as a formula."""
    return QUOTE + cell if cell.startswith((*FORMULA_STARTS, QUOTE)) else cell


def unquoted(cell: str) -> str:
    """`quoted` undone: one `'` off a cell that `quoted` would have quoted."""
    rest = cell.removeprefix(QUOTE)
    return rest if cell.startswith(QUOTE) and rest.startswith((*FORMULA_STARTS, QUOTE)) else cell
