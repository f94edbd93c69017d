"""A report's chart as a PNG (`stream-worker report --format png`), drawn off screen with
matplotlib (the `dev` extra: the store's service and console never import it). The PNG carries
the figures it draws as JSON in its Description text chunk, [[label, value], ...], so a reader
(or a test) can check them against the page's and the CSV's."""

from __future__ import annotations

from pathlib import Path

import orjson
from matplotlib.figure import Figure

from stream_worker.store.reports import Report, series


def draw(report: Report, path: Path) -> None:
    points = series(report)
    figure = Figure(figsize=(10, 4), dpi=100)  # no pyplot: no global state, no display
    axes = figure.subplots()
    horizontal = report.name in ("top-plates", "alerts")
    labels = [label for label, _ in points]
    values = [value for _, value in points]
    if horizontal:
        axes.barh(labels[::-1], values[::-1], color="#2f6db5")
    else:
        axes.bar(range(len(values)), values, color="#2f6db5", width=0.9)
        ticks = list(range(0, len(labels), max(1, len(labels) // 8)))
        axes.set_xticks(ticks, [labels[index] for index in ticks], rotation=30, ha="right")
    axes.set_title(report.title)
    figure.tight_layout()
    figures = orjson.dumps(points).decode()
    figure.savefig(path, format="png", metadata={"Title": report.title, "Description": figures})
