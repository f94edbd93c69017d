"""labels.json is checked in full before any server starts, with the entry and field named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stream_worker.evaluation.labels import LabelsError, load_labels

BOX = [94, 331, 132, 342]


def folder_with(tmp_path: Path, labels: Any, images: tuple[str, ...] = ("a.jpg",)) -> Path:
    for name in images:
        (tmp_path / name).write_bytes(b"\xff\xd8\xff")  # only its existence is checked here
    (tmp_path / "labels.json").write_bytes(orjson.dumps(labels))
    return tmp_path


def error_of(folder: Path) -> str:
    with pytest.raises(LabelsError) as caught:
        load_labels(folder)
    return str(caught.value)


def test_the_evalset_layout_loads_in_name_order(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        {
            "b.jpg": {
                "plates": ["H002EX71", None],
                "boxes": [[404, 501, 798, 591], [199, 244, 392, 295]],
                "source": "somewhere@abc:000.jpg",
                "image_size": [1200, 800],
                "note": "text known only for one plate",
            },
            "a.jpg": {"plates": [], "boxes": []},
        },
        images=("a.jpg", "b.jpg"),
    )
    labels = load_labels(folder)
    assert list(labels) == ["a.jpg", "b.jpg"]
    assert labels["b.jpg"].texts == ["H002EX71", None]
    assert labels["b.jpg"].boxes == [(404, 501, 798, 591), (199, 244, 392, 295)]
    assert labels["a.jpg"].texts == []


def test_boxes_without_plates_have_unknown_texts(tmp_path: Path) -> None:
    labels = load_labels(folder_with(tmp_path, {"a.jpg": {"boxes": [BOX, BOX]}}))
    assert labels["a.jpg"].texts == [None, None]


def test_plates_without_boxes_are_allowed_when_every_text_is_known(tmp_path: Path) -> None:
    labels = load_labels(folder_with(tmp_path, {"a.jpg": {"plates": ["H126EK178"], "boxes": None}}))
    assert labels["a.jpg"].boxes is None
    assert labels["a.jpg"].texts == ["H126EK178"]


def test_not_a_folder(tmp_path: Path) -> None:
    assert "is not a folder" in error_of(tmp_path / "missing")


def test_no_labels_file(tmp_path: Path) -> None:
    assert "cannot read" in error_of(tmp_path) and "labels.json" in error_of(tmp_path)


def test_not_json(tmp_path: Path) -> None:
    (tmp_path / "labels.json").write_text("{'a.jpg': }")
    assert "is not JSON" in error_of(tmp_path)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ([], "(top level)"),
        ({}, "(top level)"),
        ({"a.jpg": {"plates": ["A123BC77"], "boxes": [BOX, BOX]}}, "1 plates but 2 boxes"),
        ({"a.jpg": {"boxes": [[10, 10, 5, 20]]}}, "a.jpg -> boxes -> 0"),
        ({"a.jpg": {"boxes": [[-1, 10, 5, 20]]}}, "0 <= x1 < x2"),
        ({"a.jpg": {"boxes": [[1, 2, 3]]}}, "a.jpg -> boxes -> 0"),
        ({"a.jpg": {"box": [BOX]}}, "a.jpg -> box: Extra inputs are not permitted"),
        ({"a.jpg": {"plates": [None]}}, "without boxes every plate needs its text"),
        ({"a.jpg": {}}, "needs boxes, plates or both"),
        ({"a.jpg": {"plates": ["A 123"], "boxes": [BOX]}}, "a.jpg -> plates -> 0"),
        ({"a.jpg": {"plates": [""], "boxes": [BOX]}}, "a.jpg -> plates -> 0"),
        ({"a.jpg": ["A123BC77"]}, "a.jpg"),
    ],
)
def test_invalid_labels_name_the_entry(tmp_path: Path, labels: Any, expected: str) -> None:
    message = error_of(folder_with(tmp_path, labels))
    assert "labels.json is not valid" in message
    assert expected in message


def test_every_problem_is_listed_up_to_a_limit(tmp_path: Path) -> None:
    labels = {f"{i:02}.jpg": {"box": []} for i in range(12)}
    message = error_of(folder_with(tmp_path, labels, images=tuple(labels)))
    assert "00.jpg -> box" in message and "09.jpg -> box" in message
    assert "10.jpg" not in message and "and 2 more" in message


def test_labelled_image_missing(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.jpg": {"boxes": []}, "gone.jpg": {"boxes": []}})
    assert "1 labelled images are not files" in error_of(folder)
    assert "gone.jpg" in error_of(folder)
