"""The labels of a folder of scenes annotated in Pascal VOC: an `.xml` beside each image, plate boxes
without texts (../shared/plates-world/ro-scenes). They become `ImageLabel`s with boxes only, so the
existing scoring measures the detector's recall on them.

The image is the file beside the `.xml` with the same stem (the `<filename>` inside is often the
name of a file that was renamed since); only objects named as plates count, other classes are
ignored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

from pydantic import ValidationError

from stream_worker.evaluation.labels import MAX_LISTED, ImageLabel, LabelsError

PLATE_CLASSES = frozenset({"license-plate", "licence-plate", "license_plate", "plate", "licenseplate"})
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".JPG", ".JPEG", ".PNG")


def _image_beside(xml: Path) -> Path | None:
    return next((xml.with_suffix(s) for s in IMAGE_SUFFIXES if xml.with_suffix(s).is_file()), None)


def _box(element: ElementTree.Element) -> tuple[float, float, float, float]:
    values = [element.findtext(f"bndbox/{name}") for name in ("xmin", "ymin", "xmax", "ymax")]
    if any(value is None for value in values):
        raise ValueError("an object without a complete <bndbox> (xmin, ymin, xmax, ymax)")
    x1, y1, x2, y2 = (float(value) for value in values)  # type: ignore[arg-type]
    return x1, y1, x2, y2


def _label(xml: Path) -> ImageLabel:
    root = ElementTree.parse(xml).getroot()
    boxes = [
        _box(element)
        for element in root.iter("object")
        if (element.findtext("name") or "").strip().lower() in PLATE_CLASSES
    ]
    width, height = root.findtext("size/width"), root.findtext("size/height")
    size = (int(float(width)), int(float(height))) if width and height else None
    return ImageLabel(boxes=boxes, image_size=size, source=xml.name)


def load_voc_labels(folder: Path) -> dict[str, ImageLabel]:
    """Image file name -> its plate boxes, in name order; LabelsError naming every bad file."""
    labels: dict[str, ImageLabel] = {}
    problems: list[str] = []
    for xml in sorted(folder.glob("*.xml")):
        image = _image_beside(xml)
        if image is None:
            problems.append(f"{xml.name}: no image beside it ({', '.join(IMAGE_SUFFIXES[:3])})")
            continue
        try:
            labels[image.name] = _label(xml)
        except (ElementTree.ParseError, ValueError, ValidationError) as error:
            problems.append(f"{xml.name}: {error}")
    if problems:
        more = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise LabelsError(
            f"{folder} has unusable annotations:\n  " + "\n  ".join(problems[:MAX_LISTED]) + more
        )
    if not labels:
        raise LabelsError(f"{folder} has no Pascal VOC .xml annotations")
    return labels
