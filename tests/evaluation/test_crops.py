"""labels.csv / labels.tsv of a crops folder: read in full, texts normalised, every problem named."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.evaluation.crops import CropLabel, load_crop_labels
from stream_worker.evaluation.labels import LabelsError


def crops_folder(folder: Path, name: str, text: str, files: tuple[str, ...]) -> Path:
    for file in files:
        (folder / file).write_bytes(b"\x89PNG")  # only its existence is checked here
    (folder / name).write_text(text)
    return folder


def error_of(folder: Path) -> str:
    with pytest.raises(LabelsError) as caught:
        load_crop_labels(folder)
    return str(caught.value)


def test_csv_with_a_header_in_file_order_normalised(tmp_path: Path) -> None:
    text = "file,state,plate\nb.png,ca,7abc 123\na.png,ny,FUW-999\n"
    folder = crops_folder(tmp_path, "labels.csv", text, ("a.png", "b.png"))
    assert load_crop_labels(folder) == [
        CropLabel("a.png", "FUW999", None),
        CropLabel("b.png", "7ABC123", None),
    ]


def test_csv_country_column_and_columns_in_any_order(tmp_path: Path) -> None:
    text = "Plate,Country,Path\nAB123CD,AR,x/a.png\n"
    folder = crops_folder(tmp_path, "labels.csv", text, ("a.png",))
    assert load_crop_labels(folder) == [CropLabel("a.png", "AB123CD", "ar")]


def test_tsv_without_header_resolves_paths_by_file_name(tmp_path: Path) -> None:
    text = "benchmark/imgs/a.png\tAD054JI\n\nbenchmark/imgs/b.png\tJPU238\n"
    folder = crops_folder(tmp_path, "labels.tsv", text, ("a.png", "b.png"))
    assert [(c.file, c.plate) for c in load_crop_labels(folder)] == [
        ("a.png", "AD054JI"),
        ("b.png", "JPU238"),
    ]


def test_csv_header_without_plate_column_is_named(tmp_path: Path) -> None:
    folder = crops_folder(tmp_path, "labels.csv", "file,text\na.png,ABC123\n", ("a.png",))
    assert "needs a `file` (or `path`) and a `plate` column" in error_of(folder)


def test_every_bad_row_is_named_with_its_line(tmp_path: Path) -> None:
    text = "a.png\tABC123\nb.png\nc.png\t???\na.png\tXYZ999\n"
    folder = crops_folder(tmp_path, "labels.tsv", text, ("a.png", "b.png", "c.png"))
    message = error_of(folder)
    assert "line 2: 1 column(s), expected at least 2" in message
    assert "line 3: needs a file and a plate" in message
    assert "line 4: a.png already labelled on line 1" in message


def test_missing_crops_are_listed(tmp_path: Path) -> None:
    folder = crops_folder(tmp_path, "labels.tsv", "a.png\tABC123\nz.png\tXYZ999\n", ("a.png",))
    assert "1 labelled crops are not files" in error_of(folder) and "z.png" in error_of(folder)


def test_both_label_files_or_none_is_an_error(tmp_path: Path) -> None:
    assert "needs exactly one of labels.csv, labels.tsv" in error_of(tmp_path)
    (tmp_path / "labels.csv").write_text("file,plate\n")
    (tmp_path / "labels.tsv").write_text("")
    assert "needs exactly one of" in error_of(tmp_path)


def test_empty_labels_are_an_error(tmp_path: Path) -> None:
    folder = crops_folder(tmp_path, "labels.csv", "file,plate\n", ())
    assert "no labelled crops" in error_of(folder)
