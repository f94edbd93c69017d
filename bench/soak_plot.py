"""The PNG of `bench soak`'s curves (matplotlib, drawn off screen): one panel per figure against
the minute, so that a curve that climbs shows at a glance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# (title, unit, [(label, row key or a function of the row)])
PANELS: list[tuple[str, str, list[tuple[str, Any]]]] = [
    ("console p95", "ms", []),  # one line per page, filled in from the rows
    ("cameras status (CLI)", "s", [("wall", "cli_status_s")]),
    ("resident memory (PSS)", "MiB", []),  # one line per child
    ("data dir", "MiB", [("total", "data_mib"), ("broker", "broker_mib")]),
    ("worker lag", "s", [("lag", "lag_s")]),
    ("frames", "fps", [("published", "published_fps"), ("shed", "shed_fps")]),
    ("alerts of the watched plates", "count", [("alerts", "alerts"), ("< 6 s apart", "close_pairs")]),
    ("newest sighting of a watched plate", "s ago", [("age", "sighting_age_s")]),
]


def plot_unavailable() -> str | None:
    """Why no plot can be drawn here (what to install), or None."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[dev]', or pip install matplotlib)"
    return None


def _lines(title: str, fixed: list[tuple[str, Any]], rows: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    if title == "console p95":
        return [(page, lambda row, page=page: row["pages"][page]["p95_ms"]) for page in rows[0]["pages"]]
    if title == "resident memory (PSS)":
        names = sorted({name for row in rows for name in row["pss_mib_by_child"]})
        return [(name, lambda row, name=name: row["pss_mib_by_child"].get(name)) for name in names]
    return fixed


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    minutes = [row["minute"] for row in rows]
    figure, axes = plt.subplots(2, 4, figsize=(18, 8), constrained_layout=True)
    for axis, (title, unit, fixed) in zip(axes.flat, PANELS, strict=True):
        for label, key in _lines(title, fixed, rows) if rows else []:
            values = [key(row) if callable(key) else row.get(key) for row in rows]
            points = [(m, v) for m, v in zip(minutes, values, strict=True) if v is not None]
            if not points:
                continue
            axis.plot([m for m, _ in points], [v for _, v in points], marker="o", markersize=3, label=label)
        axis.set_title(title)
        axis.set_xlabel("minute")
        axis.set_ylabel(unit)
        axis.set_xlim(left=0, right=max(minutes, default=1) * 1.02)
        axis.set_ylim(bottom=0)
        if axis.has_data():
            axis.legend(fontsize="x-small", ncols=2)
        else:
            axis.text(0.5, 0.5, "n/a", ha="center", va="center", transform=axis.transAxes)
    machine, load = report["machine"], report["load_average"]
    figure.suptitle(
        f"stream-worker bench soak: {len(report['cameras'])} camera(s), {machine['cpu_model']}, "
        f"{machine['usable_cores']} cores, load before {load['before'][0]}"
        + (" (busy)" if report["busy"] else "")
        + f", commit {(report['versions'].get('git_commit') or '?')[:7]}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
