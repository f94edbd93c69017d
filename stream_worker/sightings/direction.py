"""Direction of travel from the trajectory of a plate's boxes over one pass.

A plate that grows is coming towards the camera, one that shrinks is going away; one that keeps its
size and crosses the image moves left or right (as the camera sees it). Both changes come from
least-squares lines over all reads (log width and centre x against time), so one jittery box does
not decide, and they are compared in their own units: the scale change against a minimum relative
change, the shift against a minimum number of plate widths. Below both minimums: stationary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stream_worker.contracts import Direction

Box = tuple[float, float, float, float]  # x1, y1, x2, y2


@dataclass(frozen=True, slots=True)
class DirectionRules:
    min_scale_change: float = 0.15  # relative size change over the pass that means approach/recede
    min_shift_widths: float = 1.0  # sideways travel, in plate widths, that means left/right


def _slope(times: Sequence[float], values: Sequence[float]) -> float:
    mean_t = sum(times) / len(times)
    mean_v = sum(values) / len(values)
    spread = sum((t - mean_t) ** 2 for t in times)
    return sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True)) / spread


def direction(
    track: Sequence[tuple[float, Box]], rules: DirectionRules = DirectionRules()
) -> Direction | None:
    """The direction of travel of boxes seen at the given times; None without two distinct times."""
    points = [(t, box) for t, box in track if box[2] > box[0]]
    times = [t for t, _ in points]
    if len(set(times)) < 2:
        return None
    duration = max(times) - min(times)
    widths = [box[2] - box[0] for _, box in points]
    centres = [(box[0] + box[2]) / 2 for _, box in points]
    scale = _slope(times, [math.log(w) for w in widths]) * duration  # log of last/first size
    shift = _slope(times, centres) * duration / (sorted(widths)[len(widths) // 2])  # in plate widths
    scale_ratio = abs(scale) / math.log1p(rules.min_scale_change)
    shift_ratio = abs(shift) / rules.min_shift_widths
    if max(scale_ratio, shift_ratio) < 1.0:
        return Direction.STATIONARY
    if scale_ratio >= shift_ratio:
        return Direction.APPROACHING if scale > 0 else Direction.RECEDING
    return Direction.RIGHT if shift > 0 else Direction.LEFT
