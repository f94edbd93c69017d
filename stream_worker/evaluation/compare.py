"""This run against an earlier report of the same folder (`eval --baseline OLD.json`), plate by plate:
which labelled plates were read exactly (or their boxes found) before and are not now, and the
reverse. Pure: the two reports in, the differences out.

Plates are paired by image file and position in the labels; images in only one report are counted,
not compared.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import BaseModel, ValidationError

from stream_worker.evaluation.labels import LabelsError
from stream_worker.evaluation.scoring import ImageScore, PlateRead


class PlateChange(BaseModel):
    file: str
    plate: int  # its index in the image's labels
    expected: str | None
    before: str | None  # the read then (None: not found)
    now: str | None
    what: str  # "text" (exact then, not now, or the reverse) or "box" (found then, not now, ...)


class Comparison(BaseModel):
    worse: list[PlateChange]
    better: list[PlateChange]
    plates_compared: int
    images_only_before: int
    images_only_now: int


def load_images(path: Path) -> list[ImageScore]:
    """The rows of an earlier `eval --report`; LabelsError when it cannot be read as one."""
    try:
        data = orjson.loads(path.read_bytes())
        return [ImageScore.model_validate(row) for row in data["images"]]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValidationError) as error:
        raise LabelsError(f"{path} is not a report of `stream-worker eval --report`: {error}") from error


def _change(file: str, index: int, before: PlateRead, now: PlateRead) -> tuple[int, PlateChange | None]:
    """(-1 worse, +1 better, 0 same) and what changed for one labelled plate."""
    if before.expected is not None:
        was, is_now = before.read == before.expected, now.read == now.expected
        what = "text"
    else:
        was, is_now = before.iou is not None, now.iou is not None
        what = "box"
    if was == is_now:
        return 0, None
    change = PlateChange(
        file=file, plate=index, expected=before.expected, before=before.read, now=now.read, what=what
    )
    return (1 if is_now else -1), change


def compare(before: list[ImageScore], now: list[ImageScore]) -> Comparison:
    """Every labelled plate of the images both runs scored, then and now."""
    earlier = {row.file: row for row in before}
    current = {row.file: row for row in now}
    worse: list[PlateChange] = []
    better: list[PlateChange] = []
    compared = 0
    for file in sorted(earlier.keys() & current.keys()):
        for index, (then, plate) in enumerate(zip(earlier[file].plates, current[file].plates, strict=False)):
            compared += 1
            direction, change = _change(file, index, then, plate)
            if change is not None:
                (better if direction > 0 else worse).append(change)
    return Comparison(
        worse=worse,
        better=better,
        plates_compared=compared,
        images_only_before=len(earlier.keys() - current.keys()),
        images_only_now=len(current.keys() - earlier.keys()),
    )


def comparison_lines(comparison: Comparison, baseline: Path) -> list[str]:
    """The summary against the baseline, then each plate that changed."""
    lines = [
        f"against {baseline}: {comparison.plates_compared} plates compared, {len(comparison.worse)} worse, "
        f"{len(comparison.better)} better"
        + (
            f" ({comparison.images_only_before} images only there, {comparison.images_only_now} only here)"
            if comparison.images_only_before or comparison.images_only_now
            else ""
        )
    ]
    for label, changes in (("worse", comparison.worse), ("better", comparison.better)):
        lines.extend(
            f"  {label}: {c.file} plate {c.plate} ({c.what}{f' {c.expected}' if c.expected else ''}): "
            f"{c.before or '-'} -> {c.now or '-'}"
            for c in changes
        )
    return lines
