"""The labels of an evaluation folder: `labels.json` maps each image file to its plates.

Checked in full before Triton is asked anything, so a typo in the labels fails in a second with
the entry and the field named, not after minutes of inference or as silently wrong figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, ValidationError, model_validator

LABELS_FILE = "labels.json"
MAX_LISTED = 10  # problems named in one error message

Box = tuple[float, float, float, float]  # x1, y1, x2, y2 in the image's pixels


def _check_box(box: Box) -> Box:
    x1, y1, x2, y2 = box
    if min(box) < 0 or x2 <= x1 or y2 <= y1:
        raise ValueError(f"box {list(box)} is not [x1, y1, x2, y2] with 0 <= x1 < x2 and 0 <= y1 < y2")
    return box


LabelBox = Annotated[Box, AfterValidator(_check_box)]
PlateText = Annotated[str, Field(min_length=1, pattern=r"^\S+$")]


class LabelsError(Exception):
    """The folder or its labels cannot be evaluated; the message says what to fix."""


class ImageLabel(BaseModel):
    """One image's plates: texts aligned with boxes; either may be missing, not both.

    `plates` null or absent: boxes whose texts are unknown. `boxes` null: known texts whose boxes
    are unknown (paired with the predictions by text). A null text: a plate box to find, not read.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    plates: list[PlateText | None] | None = None
    boxes: list[LabelBox] | None = None
    source: str | None = None
    image_size: tuple[int, int] | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _aligned(self) -> ImageLabel:
        if self.boxes is None and self.plates is None:
            raise ValueError("needs boxes, plates or both ([] for an image without plates)")
        if self.boxes is None and None in (self.plates or []):
            raise ValueError("without boxes every plate needs its text")
        if self.boxes is not None and self.plates is not None and len(self.plates) != len(self.boxes):
            raise ValueError(f"{len(self.plates)} plates but {len(self.boxes)} boxes: they must align")
        return self

    @property
    def texts(self) -> list[str | None]:
        """One entry per labelled plate (None: text unknown)."""
        return list(self.plates) if self.plates is not None else [None] * len(self.boxes or [])


class Labels(RootModel[dict[str, ImageLabel]]):
    root: dict[str, ImageLabel] = Field(min_length=1)


def _validation_message(path: Path, error: ValidationError) -> str:
    problems = [
        f"{' -> '.join(str(part) for part in problem['loc']) or '(top level)'}: {problem['msg']}"
        for problem in error.errors(include_url=False)
    ]
    more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
    return f"{path} is not valid:\n  " + "\n  ".join(problems[:MAX_LISTED]) + more


def load_labels(folder: Path) -> dict[str, ImageLabel]:
    """The labels of `folder`, in file-name order; LabelsError when unusable or an image is missing."""
    if not folder.is_dir():
        raise LabelsError(f"{folder} is not a folder")
    path = folder / LABELS_FILE
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise LabelsError(f"cannot read {path}: {error.strerror or error}") from error
    try:
        labels = Labels.model_validate(orjson.loads(raw)).root
    except orjson.JSONDecodeError as error:
        raise LabelsError(f"{path} is not JSON: {error}") from error
    except ValidationError as error:
        raise LabelsError(_validation_message(path, error)) from error
    missing = sorted(name for name in labels if not (folder / name).is_file())
    if missing:
        listed = ", ".join(missing[:MAX_LISTED]) + (" ..." if len(missing) > MAX_LISTED else "")
        raise LabelsError(f"{len(missing)} labelled images are not files in {folder}: {listed}")
    return dict(sorted(labels.items()))
