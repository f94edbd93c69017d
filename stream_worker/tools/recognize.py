"""The `recognize` command: read image files, ask Triton once, print one JSON line per image.

Each plate is read for a region (`--region`: its recognizers, its formats; `auto` by default, so
any plate reads) and printed with the country and format it fits and the recognizer kept;
`--raw` adds Triton's unconstrained read for debugging; `--crop` sends pictures that are each
one plate (no detection). Also draws the plates onto copies of the images (`--annotate`) so
people can look instead of read. Exit codes: 0 done (an image Triton could not decode is
reported in its line's status), 2 an image file cannot be read, the `--annotate` folder cannot
be written or the region is unknown, 3 Triton unreachable or not ready, 4 Triton rejected the
request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from stream_worker.contracts.plate_formats import AUTO_REGION, UnknownRegionError, region
from stream_worker.media import MediaSupportMissing, as_jpeg, opencv
from stream_worker.plates.reading import Reading, read_argmax, read_greedy, read_plate
from stream_worker.recognition import GLOBAL, LPRNET, FrameResult, Plate

if TYPE_CHECKING:
    from stream_worker.triton_client import TritonTLS

EXIT_OK = 0
EXIT_UNREADABLE_IMAGE = 2  # also: --annotate without OpenCV installed
EXIT_UNKNOWN_REGION = 2
EXIT_TRITON_UNAVAILABLE = 3
EXIT_TRITON_ERROR = 4

BOX_COLOUR = (0, 255, 0)  # BGR green: stands out on grey roads and cars
TEXT_COLOUR = (0, 0, 0)  # black on the green label


class RecognizeError(Exception):
    """A failure the command reports as one message and an exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class ImageFile:
    path: Path
    data: bytes


def _jpeg(image: ImageFile) -> bytes:
    """Triton decodes JPEG only: another format (a PNG crop) is re-encoded when OpenCV is here."""
    try:
        return as_jpeg(image.data, "recognize on a non-JPEG image")
    except MediaSupportMissing:
        return image.data  # Triton then reports it as an invalid image in the line's status


def read_images(paths: Sequence[Path]) -> list[ImageFile]:
    """Read every file up front so that a bad path fails before Triton is asked anything."""
    images = []
    for path in paths:
        try:
            images.append(ImageFile(path, path.read_bytes()))
        except OSError as error:
            raise RecognizeError(
                f"cannot read image file {str(path)!r}: {error.strerror or error}", EXIT_UNREADABLE_IMAGE
            ) from error
    return images


def plate_record(plate: Plate, reading: Reading, raw: bool = False) -> dict[str, Any]:
    """One plate of an image's JSON object: the format reading, where it is, and how it was read."""
    record: dict[str, Any] = {
        "text": reading.text,
        "confidence": round(reading.confidence, 4),
        "box": dict(zip(("x1", "y1", "x2", "y2"), (round(v, 1) for v in plate.box), strict=True)),
        "detection_score": round(plate.detection_score, 4),
        "country": reading.country,
        "format": reading.format,
        "format_valid": reading.format_valid,
        "recognizer": reading.recognizer,
    }
    if raw:
        record["raw"] = raw_reads(plate)
    return record


def raw_reads(plate: Plate) -> dict[str, str]:
    """Each recognizer's unconstrained read (LPRNet's greedy CTC, global_ocr's argmax per slot)."""
    reads = {}
    if plate.lprnet_probs is not None:
        reads[LPRNET] = read_greedy(plate.lprnet_probs).text
    if plate.global_probs is not None:
        reads[GLOBAL] = read_argmax(plate.global_probs).text
    return reads


def result_record(
    path: Path, result: FrameResult, readings: Sequence[Reading], raw: bool = False
) -> dict[str, Any]:
    """The JSON object printed for one image; `readings`: its plates read through the formats."""
    return {
        "file": str(path),
        "status": result.status,
        "size": {"width": result.width, "height": result.height},
        "plates": [plate_record(p, r, raw) for p, r in zip(result.plates, readings, strict=True)],
    }


def annotation_opencv() -> ModuleType:
    """OpenCV for `--annotate`, or a RecognizeError saying how to install it."""
    try:
        return opencv("recognize --annotate")
    except MediaSupportMissing as error:
        raise RecognizeError(str(error), EXIT_UNREADABLE_IMAGE) from error


def draw_plates(image: np.ndarray, result: FrameResult, texts: Sequence[str] | None = None) -> np.ndarray:
    """A copy of `image` with each plate's box and `text confidence` label above it (`texts`: the
    reads to show instead of Triton's)."""
    cv2 = annotation_opencv()
    font = cv2.FONT_HERSHEY_SIMPLEX
    canvas = image.copy()
    height, width = canvas.shape[:2]
    thickness = max(2, round(min(width, height) / 300))
    font_scale = max(0.5, min(width, height) / 900)
    for index, plate in enumerate(result.plates):
        x1, y1, x2, y2 = (round(v) for v in plate.box)
        cv2.rectangle(canvas, (x1, y1), (x2, y2), BOX_COLOUR, thickness)
        label = f"{plate.text if texts is None else texts[index]} {plate.confidence:.2f}"
        (text_w, text_h), baseline = cv2.getTextSize(label, font, font_scale, thickness=1)
        label_h = text_h + baseline + 2 * thickness
        # Above the box when there is room, else just below it.
        top = y1 - thickness - label_h if y1 - thickness - label_h >= 0 else y2 + thickness
        left = min(max(0, x1 - thickness), max(0, width - text_w - 2 * thickness))
        cv2.rectangle(canvas, (left, top), (left + text_w + 2 * thickness, top + label_h), BOX_COLOUR, -1)
        cv2.putText(
            canvas,
            label,
            (left + thickness, top + thickness + text_h),
            font,
            font_scale,
            TEXT_COLOUR,
            1,
            cv2.LINE_AA,
        )
    return canvas


def annotated_path(source: Path, out_dir: Path, taken: set[Path]) -> Path:
    """`<stem>.annotated.jpg` (`.png` for PNG sources), numbered when two inputs share a stem."""
    suffix = ".png" if source.suffix.lower() == ".png" else ".jpg"
    candidate = out_dir / f"{source.stem}.annotated{suffix}"
    counter = 2
    while candidate in taken:
        candidate = out_dir / f"{source.stem}-{counter}.annotated{suffix}"
        counter += 1
    taken.add(candidate)
    return candidate


def write_annotated(
    image: ImageFile, result: FrameResult, target: Path, texts: Sequence[str] | None = None
) -> bool:
    """Write the annotated copy; False when the image cannot be decoded here either."""
    cv2 = annotation_opencv()
    decoded = cv2.imdecode(np.frombuffer(image.data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if decoded is None:
        return False
    if not cv2.imwrite(str(target), draw_plates(decoded, result, texts)):
        raise RecognizeError(f"cannot write annotated image {str(target)!r}", EXIT_UNREADABLE_IMAGE)
    return True


def run(
    paths: Sequence[Path],
    url: str,
    timeout_s: float,
    annotate_dir: Path | None,
    emit: Callable[[str], None],
    warn: Callable[[str], None],
    tls: TritonTLS | None = None,
    region_code: str = AUTO_REGION,
    raw: bool = False,
    crops: bool = False,
) -> None:
    """Recognise `paths` in one Triton request, `emit` one JSON line each; raises RecognizeError.

    `region_code`: whose plates to read; `raw`: add Triton's unconstrained read to each plate;
    `crops`: each image is one plate, read whole."""
    from stream_worker.triton_client import (
        PlateRecognitionClient,
        TritonInferenceError,
        TritonUnavailableError,
    )

    try:
        chosen = region(region_code)
    except UnknownRegionError as error:
        raise RecognizeError(str(error), EXIT_UNKNOWN_REGION) from error
    images = read_images(paths)
    if annotate_dir is not None:
        annotation_opencv()  # before Triton is asked anything
        try:
            annotate_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RecognizeError(
                f"cannot create the --annotate folder {str(annotate_dir)!r}: {error.strerror or error}",
                EXIT_UNREADABLE_IMAGE,
            ) from error
    try:
        with PlateRecognitionClient(url, timeout_s=timeout_s, tls=tls) as client:
            results = client.recognize(
                [_jpeg(image) for image in images],
                recognizers=[chosen.recognizers] * len(images),
                frame_is_plate=[crops] * len(images),
            )
    except TritonUnavailableError as error:
        raise RecognizeError(
            f"cannot reach the plate_recognition model on Triton at {url} "
            f"(set --url or STREAM_WORKER_TRITON_URL; start one with `stream-worker triton`): {error}",
            EXIT_TRITON_UNAVAILABLE,
        ) from error
    except TritonInferenceError as error:
        raise RecognizeError(str(error), EXIT_TRITON_ERROR) from error

    taken: set[Path] = set()
    for image, result in zip(images, results, strict=True):
        try:
            readings = [read_plate(chosen, plate.lprnet_probs, plate.global_probs) for plate in result.plates]
        except ValueError as error:  # Triton answered without the recognizers asked for
            raise RecognizeError(f"Triton at {url}: {error}", EXIT_TRITON_ERROR) from error
        emit(orjson.dumps(result_record(image.path, result, readings, raw)).decode())
        if annotate_dir is None:
            continue
        target = annotated_path(image.path, annotate_dir, taken)
        if not write_annotated(image, result, target, [reading.text for reading in readings]):
            warn(f"not annotated {str(image.path)!r}: the image cannot be decoded ({result.status})")
