"""Video clips named after their plate: the plate from the name, every frame as a JPEG."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from stream_worker.evaluation.clips import clip_plate, load_clip_frames
from stream_worker.evaluation.labels import LabelsError
from stream_worker.evaluation.layouts import Layout, detect_layout


def write_clip(path: Path, frames: int) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 4.0, (64, 48))
    assert writer.isOpened()
    for index in range(frames):
        writer.write(np.full((48, 64, 3), 40 * index, np.uint8))
    writer.release()
    return path


@pytest.mark.parametrize(
    ("name", "plate"),
    [
        ("gate-van-H133OE123.mov", "H133OE123"),
        ("dashcam-rain-t404ya47.mp4", "T404YA47"),
        ("H133OE123.mov", None),  # no dash: no name before the plate
        ("gate-van.mov", None),  # no digit: a word, not a plate
    ],
)
def test_the_plate_is_the_last_dash_part_of_the_name(name: str, plate: str | None) -> None:
    assert clip_plate(Path(name)) == plate


def test_every_frame_of_every_clip_in_name_order(tmp_path: Path) -> None:
    write_clip(tmp_path / "b-XYZ999.avi", 2)
    write_clip(tmp_path / "a-A123BC77.avi", 3)
    assert detect_layout(tmp_path) is Layout.CLIPS
    frames = load_clip_frames(tmp_path)
    assert [(f.name, f.plate) for f in frames] == [
        ("a-A123BC77.avi#0000", "A123BC77"),
        ("a-A123BC77.avi#0001", "A123BC77"),
        ("a-A123BC77.avi#0002", "A123BC77"),
        ("b-XYZ999.avi#0000", "XYZ999"),
        ("b-XYZ999.avi#0001", "XYZ999"),
    ]
    decoded = cv2.imdecode(np.frombuffer(frames[1].jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == (48, 64, 3) and abs(int(decoded.mean()) - 40) <= 3


def test_an_unlabelled_or_broken_clip_is_named(tmp_path: Path) -> None:
    write_clip(tmp_path / "nameless.avi", 1)
    with pytest.raises(LabelsError, match=r"nameless\.avi"):
        load_clip_frames(tmp_path)
    (tmp_path / "nameless.avi").unlink()
    (tmp_path / "cam-A123BC77.mp4").write_bytes(b"not a video")
    with pytest.raises(LabelsError, match=r"cam-A123BC77\.mp4"):
        load_clip_frames(tmp_path)
