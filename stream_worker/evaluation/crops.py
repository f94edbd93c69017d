"""The labels of a folder of plate crops: one picture per plate, its text (and maybe its country).

Two layouts (../shared/plates-world's): `labels.csv` with a header naming at least `file` (or
`path`) and `plate`, optionally `country` and `state`; `labels.tsv`, rows of `path<TAB>plate`
without a header. A path is resolved by its file name inside the folder (the TSV keeps the paths of
the set it was cut from). Texts are normalised as watch lists are (uppercase, no spaces or dashes).
Checked in full before Triton is asked anything, every problem named with its line.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from stream_worker.contracts.watchlist import normalise_plate
from stream_worker.evaluation.labels import MAX_LISTED, LabelsError

CSV_LABELS = "labels.csv"
TSV_LABELS = "labels.tsv"
CROP_LABEL_FILES = (CSV_LABELS, TSV_LABELS)
FILE_COLUMNS = ("file", "path")


@dataclass(frozen=True)
class CropLabel:
    file: str  # the crop's file name inside the folder
    plate: str  # normalised
    country: str | None  # lower-case code from the labels, else None (the folder's, see layouts)


def _rows(path: Path, delimiter: str) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise LabelsError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from error
    return [row for row in csv.reader(text.splitlines(), delimiter=delimiter)]


def _csv_columns(path: Path, header: list[str]) -> tuple[int, int, int | None]:
    """Indices of the file, plate and (optional) country columns of a labels.csv header."""
    names = [name.strip().lower() for name in header]
    file_column = next((names.index(name) for name in FILE_COLUMNS if name in names), None)
    if file_column is None or "plate" not in names:
        raise LabelsError(f"{path}: the header {header} needs a `file` (or `path`) and a `plate` column")
    return file_column, names.index("plate"), names.index("country") if "country" in names else None


def _parse(path: Path) -> tuple[list[CropLabel], list[str]]:
    """The labels and the problems found, each with its line number."""
    if path.name == CSV_LABELS:
        rows = _rows(path, ",")
        if not rows:
            raise LabelsError(f"{path} is empty")
        file_column, plate_column, country_column = _csv_columns(path, rows[0])
        numbered = list(enumerate(rows[1:], start=2))
    else:
        file_column, plate_column, country_column = 0, 1, None
        numbered = list(enumerate(_rows(path, "\t"), start=1))
    labels: list[CropLabel] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    width = max(file_column, plate_column, country_column or 0) + 1
    for line, row in numbered:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < width:
            problems.append(f"line {line}: {len(row)} column(s), expected at least {width}")
            continue
        name = PurePosixPath(row[file_column].strip().replace("\\", "/")).name
        plate = normalise_plate(row[plate_column])
        if not name or not plate or not plate.isalnum():
            problems.append(f"line {line}: needs a file and a plate of letters and digits, got {row}")
            continue
        if name in seen:
            problems.append(f"line {line}: {name} already labelled on line {seen[name]}")
            continue
        seen[name] = line
        country = row[country_column].strip().lower() or None if country_column is not None else None
        labels.append(CropLabel(name, plate, country))
    return labels, problems


def load_crop_labels(folder: Path) -> list[CropLabel]:
    """The crops of `folder` in file-name order; LabelsError when unusable or a crop is missing."""
    present = [folder / name for name in CROP_LABEL_FILES if (folder / name).is_file()]
    if len(present) != 1:
        raise LabelsError(f"{folder} needs exactly one of {', '.join(CROP_LABEL_FILES)}")
    path = present[0]
    labels, problems = _parse(path)
    if not labels and not problems:
        problems.append("no labelled crops")
    if problems:
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise LabelsError(f"{path} is not valid:\n  " + "\n  ".join(problems[:MAX_LISTED]) + more)
    missing = sorted(label.file for label in labels if not (folder / label.file).is_file())
    if missing:
        listed = ", ".join(missing[:MAX_LISTED]) + (" ..." if len(missing) > MAX_LISTED else "")
        raise LabelsError(f"{len(missing)} labelled crops are not files in {folder}: {listed}")
    return sorted(labels, key=lambda label: label.file)
