"""Figures, the printed table and the JSON report shared by every scenario."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson


def latency_ms(seconds: Sequence[float]) -> dict[str, float | None]:
    """p50/p99/mean/max in milliseconds (None when nothing was measured)."""
    if not seconds:
        return {"p50_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    values = np.asarray(seconds, dtype=np.float64) * 1000
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p99_ms": round(float(np.percentile(values, 99)), 1),
        "mean_ms": round(float(values.mean()), 1),
        "max_ms": round(float(values.max()), 1),
    }


def rate(frames: int, seconds: float) -> float:
    return round(frames / seconds, 3) if seconds > 0 else 0.0


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 3)


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain-text table (also valid Markdown) of `columns` from `rows`; missing cells print '-'."""

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
        return str(value)

    cells = [[cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    lines = [
        "| " + " | ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True)) + " |",
        "|" + "|".join("-" * (width + 2) for width in widths) + "|",
    ]
    lines += [
        "| " + " | ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)) + " |"
        for line in cells
    ]
    return "\n".join(lines)


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n")
