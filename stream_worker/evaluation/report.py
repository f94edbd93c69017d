"""What `eval` shows and writes: a row per image as it is scored, a summary, a JSON report."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson
from pydantic import BaseModel

from stream_worker.evaluation.compare import Comparison
from stream_worker.evaluation.scoring import LOOSE_IOU_THRESHOLD, ImageScore, Totals
from stream_worker.evaluation.settings import EvalSettings

COLUMNS = (("file", 24), ("found", 6), ("exact", 6), ("other", 6), ("status", 14), ("texts read", 0))


class EvalReport(BaseModel):
    """The JSON report: enough to compare two runs without rerunning either."""

    created_at: datetime
    settings: EvalSettings
    layout: str = "photos"  # photos, crops or voc (evaluation/layouts.py); reports before it: photos
    region: str | None = None  # what the plates were read for; None in reports from before regions
    triton_url: str
    model_version: str
    totals: Totals
    by_country: dict[str, Totals] = {}  # per country the labels name (empty when none does)
    baseline: Comparison | None = None  # against `--baseline`, when given
    images: list[ImageScore]


def _row(*cells: str) -> str:
    return "  ".join(f"{cell:<{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True)).rstrip()


def table_header() -> str:
    return _row(*(name for name, _ in COLUMNS)) + " (expected, when wrong)"


def _reads(score: ImageScore) -> str:
    cells = [
        (plate.read or "-") if plate.read == plate.expected else f"{plate.read or '-'} ({plate.expected})"
        for plate in score.plates
        if plate.expected is not None
    ]
    return " ".join(cells)


def image_row(score: ImageScore) -> str:
    """One image: boxes found of labelled, exact texts of known, other boxes, status, the reads."""
    return _row(
        score.file,
        f"{score.found}/{score.labelled}",
        f"{score.texts_exact}/{score.texts_labelled}",
        str(score.other_boxes),
        score.status.split(":", 1)[0],
        _reads(score),
    )


def _of(part: int, whole: int, rate: float | None) -> str:
    return f"{part}/{whole}" + (f" ({rate:.1%})" if rate is not None else "")


def summary_lines(totals: Totals) -> list[str]:
    mean_iou = f", mean IoU {totals.mean_iou:.2f}" if totals.mean_iou is not None else ""
    cer = f"{totals.char_error_rate:.3f} " if totals.char_error_rate is not None else ""
    loose = _of(totals.plates_found_loose, totals.plates_labelled, totals.found_loose_rate)
    lines = [
        f"images            {totals.images} ({totals.rejected} rejected by Triton)",
        f"plates found      {_of(totals.plates_found, totals.plates_labelled, totals.found_rate)}{mean_iou}",
        f"exact texts       {_of(totals.texts_exact, totals.texts_labelled, totals.exact_rate)}",
        f"within 1 char     {_of(totals.texts_within_one, totals.texts_labelled, totals.within_one_rate)}",
        f"char error rate   {cer}({totals.char_errors} edits / {totals.char_total} characters)",
        f"other boxes       {totals.other_boxes}",
    ]
    if totals.images_matched_by_text:
        lines.append(
            f"{totals.images_matched_by_text} image(s) labelled without boxes: their plates were paired "
            "with the reads by closest text and count in no box figure"
        )
    if totals.plates_labelled:
        lines.append(f"found at IoU {LOOSE_IOU_THRESHOLD}  {loose}")
    return lines


def _share(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.3f}"


def country_lines(by_country: dict[str, Totals]) -> list[str]:
    """A row per country: plates, exact share, character accuracy, boxes found at both IoUs."""
    if not by_country:
        return []
    header = f"{'country':<8} {'texts':>6} {'exact':>6} {'chars':>6} {'boxes':>6} {'found':>6} {'@0.3':>6}"
    rows = [
        f"{country:<8} {t.texts_labelled:>6} {_share(t.exact_rate):>6} {_share(t.char_accuracy):>6} "
        f"{t.plates_labelled:>6} {_share(t.found_rate):>6} {_share(t.found_loose_rate):>6}"
        for country, t in by_country.items()
    ]
    return ["", "by country (exact: share of texts read exactly; chars: 1 - char error rate):", header, *rows]


def write_report(path: Path, report: EvalReport) -> None:
    """Write the JSON report (parent folders too); OSError when it cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
