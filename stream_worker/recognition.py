"""What the `plate_recognition` Triton model answers, as plain Python values.

Shared by the Triton client, the worker's event builder and the `recognize` command, so that
none of them depends on the others' wire formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FRAME_OK = "ok"
INVALID_IMAGE = "invalid_image"
SINGLE_ROW, DOUBLE_ROW = "single_row", "double_row"
# The recognizers `plate_recognition` can run per frame (its `plate_recognizers` input): `lprnet`
# (STN + LPRNet, Russian plates, the default) and `global` (global_ocr, Latin-script plates).
LPRNET, GLOBAL = "lprnet", "global"
RECOGNIZERS = (LPRNET, GLOBAL)

Point = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Plate:
    text: str
    confidence: float
    box: tuple[float, float, float, float]  # x1, y1, x2, y2 in the source image's pixels
    detection_score: float
    # top-left, top-right, bottom-right, bottom-left in source pixels; () when the model sent none
    corners: tuple[Point, ...] = ()
    character_confidences: tuple[float, ...] = ()  # one per character of `text`
    layout: str = SINGLE_ROW  # or DOUBLE_ROW, as the detector classified the plate
    image: bytes = b""  # the plate's picture (a JPEG of at most 16 KB) when its frame asked; else b""
    # Which recognizers read the plate (`RECOGNIZERS` order); `text` is LPRNet's reading when it ran
    # and read something, else global_ocr's plain argmax.
    recognizers: tuple[str, ...] = (LPRNET,)
    # LPRNet's softmax [18 time steps, 23 classes] (class 22 = CTC blank) and global_ocr's [9 slots,
    # 37 classes `0-9A-Z_`], for reading through a plate format; None where that one did not run.
    lprnet_probs: np.ndarray | None = field(default=None, compare=False, repr=False)
    global_probs: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class FrameResult:
    status: str  # "ok" or "invalid_image: <reason>"
    width: int  # 0 when the frame could not be decoded
    height: int
    plates: tuple[Plate, ...]
    masked: int = 0  # plates Triton dropped because their centre lies in one of the frame's masks

    @property
    def ok(self) -> bool:
        return self.status == FRAME_OK
