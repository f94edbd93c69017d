"""The frames of a `bench chaos` run: what is published, in which order, and what must come of it.

Kept apart from the run so that the plan and the expectations the checker holds each frame against
(bench/chaos_check.py) are tested without servers (tests/bench/test_hostile.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import cv2

from bench.chaos_check import Published
from bench.frames import CAR_OFFSETS, crop_view
from bench.hostile import Kind, Material, Record
from stream_worker.contracts import FrameHeader


def valid_frames(samples: Path, width: int, height: int) -> list[bytes]:
    """Camera-like JPEGs made from the sample photos at run time (they may not be committed):
    crops of the street photo at several offsets (with a plate) and the cat photo, mirrored too."""
    car = cv2.imread(str(samples / "car.jpg"), cv2.IMREAD_COLOR)
    cat = cv2.imread(str(samples / "cat.jpeg"), cv2.IMREAD_COLOR)
    if car is None or cat is None:
        raise FileNotFoundError(f"the sample photos car.jpg and cat.jpeg are missing from {samples}")
    images = [crop_view(car, left, top) for left, top in CAR_OFFSETS]
    images += [cat, cat[:, ::-1]]
    frames = []
    for image in images:
        resized = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
        ok, buffer = cv2.imencode(".jpg", resized, [cv2.IMWRITE_JPEG_QUALITY, 85])
        if not ok:
            raise RuntimeError("OpenCV could not encode a frame")
        frames.append(buffer.tobytes())
    return frames


@dataclass
class Planned:
    """A frame to publish: its kind, camera and record."""

    index: int
    kind: Kind | None  # None: valid
    camera: int
    record: Record

    @property
    def kind_name(self) -> str:
        return "valid" if self.kind is None else self.kind.name

    @property
    def expected_reason(self) -> str | None:
        if self.kind is None or self.kind.expected.reason is None:
            return None
        return self.kind.expected.reason.value


def plan_frames(
    valid: Sequence[bytes], count: int, hostile: Sequence[Kind], cameras: int, rng: random.Random
) -> list[Planned]:
    """`count` valid frames in camera turn, the hostile ones at random places between them."""
    material = Material(valid)
    kinds: list[Kind | None] = [None] * count + list(hostile)
    rng.shuffle(kinds)
    plan = []
    for index, kind in enumerate(kinds):
        if kind is None:
            plan.append(Planned(index, None, index % cameras, Record(valid[index % len(valid)])))
        else:
            plan.append(Planned(index, kind, rng.randrange(cameras), kind.make(rng, material)))
    return plan


def camera_name(camera: int) -> str:
    return f"cam{camera:02d}"


def record_parts(frame: Planned) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """Key and headers as published: the camera's own unless the hostile kind sets them."""
    camera = camera_name(frame.camera).encode()
    key = camera if frame.record.key == b"" else frame.record.key
    if frame.record.headers is not None:
        return key, list(frame.record.headers)
    captured_at = datetime.now(UTC).isoformat(timespec="milliseconds").encode()
    return key, [
        (FrameHeader.CAMERA_ID.value, camera),
        (FrameHeader.FRAME_ID.value, f"chaos-{frame.index}".encode()),
        (FrameHeader.CAPTURED_AT.value, captured_at),
    ]


def expectation(frame: Planned, source: tuple[int, int]) -> Published:
    """What the checker holds the frame's output against."""
    key, headers = record_parts(frame)
    named = dict(headers)
    camera = named.get(FrameHeader.CAMERA_ID.value) or key
    frame_id = named.get(FrameHeader.FRAME_ID.value)
    return Published(
        frame.index,
        frame.kind_name,
        frame.expected_reason,
        source,
        camera.decode(errors="replace") if camera else None,
        frame_id.decode(errors="replace") if frame_id else None,
    )
