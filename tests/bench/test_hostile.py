"""bench chaos's hostile frames and hand-written JPEGs, without servers.

Every kind's label is held against the code that decides in the real pipeline: the worker's
validate() first, then plate_recognition's frames.py with the limits of its config.pbtxt (header
checks, the decoded-memory budget, OpenCV's decode). The chaos run then checks the same labels
end to end.
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np
import pytest

from bench import jpegs
from bench.chaos_plan import Planned, expectation, plan_frames, record_parts, valid_frames
from bench.frames import samples_dir
from bench.hostile import KINDS, MAX_PIXELS, Material, pick_kinds, with_declared_size
from stream_worker.worker.validate import InputRecord, Rejection, validate

REPO_ROOT = Path(__file__).resolve().parents[2]
PLATE_RECOGNITION = REPO_ROOT / "model_repository" / "plate_recognition"
PER_KIND = 6


def load_frames_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "chaos_plate_recognition_frames", PLATE_RECOGNITION / "1" / "frames.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def parameter(name: str) -> int:
    config = (PLATE_RECOGNITION / "config.pbtxt").read_text()
    found = re.search(rf'key: "{name}", value: {{ string_value: "(\d+)" }}', config)
    assert found, name
    return int(found.group(1))


@pytest.fixture(scope="module")
def valid() -> list[bytes]:
    return valid_frames(samples_dir(), 640, 360)


@pytest.fixture(scope="module")
def material(valid: list[bytes]) -> Material:
    return Material(valid)


def pipeline_outcome(frames: ModuleType, record: InputRecord) -> str:
    """What the worker and plate_recognition make of a record: "event" or the dead letter's reason."""
    checked = validate(record, 8 * 1024 * 1024)
    if isinstance(checked, Rejection):
        return checked.reason.value
    budget = parameter("decoded_memory_budget_mb") * 2**20
    try:
        plan = frames.plan_decode(checked.image, parameter("max_pixels"), parameter("max_decoded_pixels"))
        if plan.memory_bytes > budget:
            return "invalid_image"
        frames.decode_planned(checked.image, plan)
    except frames.InvalidImage:
        return "invalid_image"
    return "event"


def as_input(frame: Planned) -> InputRecord:
    key, headers = record_parts(frame)
    return InputRecord("frames", 0, frame.index, key, frame.record.value, list(headers), 0.0)


def test_max_pixels_is_the_one_plate_recognition_serves() -> None:
    assert parameter("max_pixels") == MAX_PIXELS


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_kind_has_the_outcome_its_label_says(kind, material: Material) -> None:
    frames = load_frames_module()
    rng = random.Random(kind.name)
    wanted = "event" if kind.expected.event else kind.expected.reason.value
    for index in range(PER_KIND):
        frame = Planned(index, kind, index % 3, kind.make(rng, material))
        assert pipeline_outcome(frames, as_input(frame)) == wanted, (kind.name, index)


def test_the_plan_interleaves_every_frame_once(valid: list[bytes]) -> None:
    plan = plan_frames(valid, 50, pick_kinds(24), 4, random.Random(1))
    assert len(plan) == 74 and [frame.index for frame in plan] == list(range(74))
    assert sum(frame.kind is None for frame in plan) == 50
    assert {frame.kind.name for frame in plan if frame.kind} == {kind.name for kind in KINDS}
    hostile_at = [frame.index for frame in plan if frame.kind]
    assert hostile_at[0] < 40 and hostile_at[-1] > 33, "spread through the run, not bunched"
    camera_frame = next(frame for frame in plan if frame.kind is None)
    published = expectation(camera_frame, (1, 7))
    assert published.expects_event and published.camera_id == f"cam{camera_frame.camera:02d}"
    assert published.frame_id == f"chaos-{camera_frame.index}"
    no_headers = next(frame for frame in plan if frame.kind_name == "no_headers")
    assert expectation(no_headers, (0, 3)).frame_id is None  # the worker falls back to the source


def decoded(data: bytes, flags: int = cv2.IMREAD_COLOR) -> np.ndarray | None:
    return cv2.imdecode(np.frombuffer(data, np.uint8), flags)


@pytest.mark.parametrize("sample", [0, 3, 100, 126, 127, 128, 129, 200, 255])
def test_arithmetic_coding_decodes_to_the_colour_written(sample: int) -> None:
    image = decoded(jpegs.flat_arithmetic(72, 40, sample))
    assert image is not None and image.shape == (40, 72, 3)
    assert (image == sample).all()


def test_huffman_cmyk_and_lossless_writers_decode_to_what_was_written() -> None:
    image = decoded(jpegs.flat_huffman(64, 48, [100, 128, 128]))
    assert image is not None and (image == 100).all()
    white = decoded(jpegs.flat_cmyk(64, 48, [0, 0, 0, 0]))
    assert white is not None and (white == 255).all()
    grey = decoded(jpegs.flat_lossless(64, 48, 77), cv2.IMREAD_GRAYSCALE)  # only greyscale output
    assert grey is not None and (grey == 77).all()
    assert decoded(jpegs.flat_lossless(64, 48, 77)) is None  # no colour conversion in lossless mode
    assert decoded(jpegs.flat_huffman(64, 48, [1000], 12, jpegs.SOF_EXTENDED)) is None  # no 12-bit API


def test_the_arithmetic_coder_propagates_carries_through_ff_bytes() -> None:
    """Many bright-to-dark frames: the coder's output bytes (stuffed) must still decode exactly."""
    rng = random.Random(5)
    for _ in range(20):
        width, height, sample = rng.randrange(8, 200), rng.randrange(8, 120), rng.randrange(256)
        image = decoded(jpegs.flat_arithmetic(width, height, sample))
        assert image is not None and (image == sample).all(), (width, height, sample)


def test_declared_size_is_rewritten_in_the_frame_header(valid: list[bytes]) -> None:
    frames = load_frames_module()
    header = frames.jpeg_header(with_declared_size(valid[0], 1234, 567))
    assert (header.width, header.height) == (1234, 567)
