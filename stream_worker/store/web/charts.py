"""A report's chart as inline SVG, drawn on the server: no script, no style attribute and nothing
loaded from elsewhere, so the console's Content-Security-Policy holds (colours come from
console.css by class). Each bar carries a <title> with its label and value (a hover tooltip, and
what a screen reader says)."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 720, 240
LEFT, BOTTOM, TOP = 48, 36, 12
LABEL_WIDTH = 110  # horizontal bars: the labels' column


def _number(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def columns(points: Sequence[tuple[str, int]], title: str) -> Markup:
    """Vertical bars in order (times): the largest value on the axis, first and last label below."""
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    top = max((value for _, value in points), default=0) or 1
    step = plot_w / max(len(points), 1)
    parts = [
        f'<text x="{LEFT - 6}" y="{TOP + 10}" class="axis" text-anchor="end">{top}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" class="axis" text-anchor="end">0</text>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 8}" y2="{TOP + plot_h}" class="axis"/>',
    ]
    for index, (label, value) in enumerate(points):
        height = value / top * plot_h
        parts.append(
            f'<rect class="bar" x="{_number(LEFT + index * step)}" y="{_number(TOP + plot_h - height)}" '
            f'width="{_number(max(step - 1, 1))}" height="{_number(height)}">'
            f"<title>{escape(label)}: {value}</title></rect>"
        )
    if points:
        below = TOP + plot_h + 16
        parts.append(f'<text x="{LEFT}" y="{below}" class="axis">{escape(points[0][0])}</text>')
        parts.append(
            f'<text x="{WIDTH - 8}" y="{below}" class="axis" text-anchor="end">{escape(points[-1][0])}</text>'
        )
    return _svg(parts, WIDTH, HEIGHT, title)


def bars(points: Sequence[tuple[str, int]], title: str) -> Markup:
    """Horizontal bars (categories: plates, lists), each labelled with its name and value."""
    row = 22
    height = max(len(points), 1) * row + 8
    plot_w = WIDTH - LABEL_WIDTH - 60
    top = max((value for _, value in points), default=0) or 1
    parts = []
    for index, (label, value) in enumerate(points):
        y = 4 + index * row
        width = value / top * plot_w
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" class="axis" text-anchor="end">{escape(label)}</text>'
            f'<rect class="bar" x="{LABEL_WIDTH}" y="{y + 2}" width="{_number(width)}" height="{row - 6}">'
            f"<title>{escape(label)}: {value}</title></rect>"
            f'<text x="{_number(LABEL_WIDTH + width + 4)}" y="{y + 15}" class="axis">{value}</text>'
        )
    return _svg(parts, WIDTH, height, title)


def _svg(parts: list[str], width: int, height: int, title: str) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>{''.join(parts)}</svg>"
    )
