"""The layout of an eval folder, told from its files, and the country its name gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.evaluation.labels import LabelsError
from stream_worker.evaluation.layouts import Layout, detect_layout, folder_country


@pytest.mark.parametrize(
    ("files", "layout"),
    [
        (("labels.json", "a.jpg"), Layout.PHOTOS),
        (("labels.csv", "a.png"), Layout.CROPS),
        (("labels.tsv",), Layout.CROPS),
        (("a.jpg", "a.xml", "LICENSE-MIT"), Layout.VOC),
    ],
)
def test_layout_from_the_files(tmp_path: Path, files: tuple[str, ...], layout: Layout) -> None:
    for name in files:
        (tmp_path / name).write_bytes(b"")
    assert detect_layout(tmp_path) is layout


def test_no_labels_or_mixed_layouts_say_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match=r"has no labels: give it labels\.json"):
        detect_layout(tmp_path)
    (tmp_path / "labels.json").write_bytes(b"{}")
    (tmp_path / "a.xml").write_bytes(b"")
    with pytest.raises(LabelsError, match=r"mixes layouts \(photos, voc\)"):
        detect_layout(tmp_path)
    with pytest.raises(LabelsError, match="is not a folder"):
        detect_layout(tmp_path / "missing")


@pytest.mark.parametrize(
    ("name", "country"),
    [
        ("us-crops", "us"),
        ("AR_crops", "ar"),
        ("ro", "ro"),
        ("scenes", None),
        ("boxes_only", None),
        ("usa-x", None),
    ],
)
def test_folder_country_from_its_name(tmp_path: Path, name: str, country: str | None) -> None:
    folder = tmp_path / name
    folder.mkdir()
    assert folder_country(folder) == country
