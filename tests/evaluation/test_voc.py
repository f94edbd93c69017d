"""Pascal VOC scenes: plate boxes from the .xml beside each image, other classes left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.evaluation.labels import LabelsError
from stream_worker.evaluation.voc import load_voc_labels


def voc_object(name: str, box: tuple[float, float, float, float]) -> str:
    x1, y1, x2, y2 = box
    return (
        f"<object><name>{name}</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
        f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>"
    )


def annotation(*objects: str, filename: str = "renamed#t=1.jpg") -> str:
    size = "<size><width>1280</width><height>720</height><depth>3</depth></size>"
    return f"<annotation><filename>{filename}</filename>{size}{''.join(objects)}</annotation>"


def test_plate_boxes_of_each_image_by_its_stem(tmp_path: Path) -> None:
    (tmp_path / "b_t2.jpg").write_bytes(b"\xff\xd8\xff")
    (tmp_path / "a_t1.jpg").write_bytes(b"\xff\xd8\xff")
    (tmp_path / "b_t2.xml").write_text(annotation())
    (tmp_path / "a_t1.xml").write_text(
        annotation(voc_object("license-plate", (113.1, 399.8, 192.7, 420)), voc_object("car", (1, 2, 3, 4)))
    )
    labels = load_voc_labels(tmp_path)
    assert list(labels) == ["a_t1.jpg", "b_t2.jpg"]
    assert labels["a_t1.jpg"].boxes == [(113.1, 399.8, 192.7, 420.0)]
    assert labels["a_t1.jpg"].plates is None and labels["a_t1.jpg"].texts == [None]
    assert labels["a_t1.jpg"].image_size == (1280, 720)
    assert labels["b_t2.jpg"].boxes == []


def test_bad_annotations_are_each_named(tmp_path: Path) -> None:
    (tmp_path / "lonely.xml").write_text(annotation())
    (tmp_path / "broken.jpg").write_bytes(b"")
    (tmp_path / "broken.xml").write_text("<annotation><object>")
    (tmp_path / "flat.jpg").write_bytes(b"")
    (tmp_path / "flat.xml").write_text(annotation(voc_object("license-plate", (50, 10, 40, 20))))
    with pytest.raises(LabelsError) as caught:
        load_voc_labels(tmp_path)
    message = str(caught.value)
    assert "lonely.xml: no image beside it" in message
    assert "broken.xml:" in message
    assert "flat.xml:" in message and "is not [x1, y1, x2, y2]" in message


def test_no_annotations_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="no Pascal VOC"):
        load_voc_labels(tmp_path)
