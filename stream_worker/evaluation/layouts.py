"""Which kind of labelled folder `eval` was given, told from its files, and whose plates it holds.

- `photos`: a `labels.json` (../shared/evalset's layout): scenes, plate boxes and texts.
- `crops`: a `labels.csv` or `labels.tsv` (../shared/plates-world/us-crops, ar-crops): one plate per
  picture, read whole (`frame_is_plate`), texts only.
- `voc`: Pascal VOC `.xml` files beside the images (../shared/plates-world/ro-scenes): boxes only.
- `clips`: video files named after their plate (../shared/videos): every frame read, by text.

A folder's country is the code its name starts with (`us-crops` -> `us`, `ro_scenes` -> `ro`), so
that the plates-world folders need no extra flag; labels naming a country per row win over it.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path

from stream_worker.evaluation.crops import CROP_LABEL_FILES
from stream_worker.evaluation.labels import LABELS_FILE, LabelsError
from stream_worker.media import VIDEO_SUFFIXES

_COUNTRY_PREFIX = re.compile(r"^([a-z]{2})(?:[-_]|$)")


class Layout(StrEnum):
    PHOTOS = "photos"
    CROPS = "crops"
    VOC = "voc"
    CLIPS = "clips"


def detect_layout(folder: Path) -> Layout:
    """The folder's layout; LabelsError when it is not a folder or its files say none or several."""
    if not folder.is_dir():
        raise LabelsError(f"{folder} is not a folder")
    found = []
    if (folder / LABELS_FILE).is_file():
        found.append(Layout.PHOTOS)
    if any((folder / name).is_file() for name in CROP_LABEL_FILES):
        found.append(Layout.CROPS)
    if next(folder.glob("*.xml"), None) is not None:
        found.append(Layout.VOC)
    if not found and any(path.suffix.lower() in VIDEO_SUFFIXES for path in folder.iterdir()):
        found.append(Layout.CLIPS)  # only without labels: a photo folder may hold a video too
    if len(found) == 1:
        return found[0]
    wanted = (
        f"{LABELS_FILE} (photos), {' or '.join(CROP_LABEL_FILES)} (crops), Pascal VOC *.xml (scenes) "
        "or video clips named after their plate"
    )
    if not found:
        raise LabelsError(f"{folder} has no labels: give it {wanted}")
    raise LabelsError(f"{folder} mixes layouts ({', '.join(found)}): keep one of {wanted}")


def folder_country(folder: Path) -> str | None:
    """The two-letter code the folder's name starts with, lower case; None when it has none."""
    match = _COUNTRY_PREFIX.match(folder.resolve().name.lower())
    return match.group(1) if match else None
