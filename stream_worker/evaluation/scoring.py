"""How well one image was read, and the totals over a folder: pure functions, no I/O.

A labelled plate is found when a predicted box overlaps it with IoU >= 0.5; boxes pair one to one,
best IoU first, so one prediction never counts for two plates. A plate's text is then compared
with the read of the box that found it; a plate not found (or a frame Triton rejected) counts as
wrong, with every character an error. Images labelled with texts but no boxes pair their plates
with the predictions by closest text instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from stream_worker.evaluation.labels import Box, ImageLabel
from stream_worker.plates.distance import edit_distance
from stream_worker.recognition import FRAME_OK

IOU_THRESHOLD = 0.5
LOOSE_IOU_THRESHOLD = 0.3  # a plate found at all, however loose its box (the recall figure)


class Prediction(BaseModel):
    """One plate the pipeline returned: what scoring needs of it."""

    model_config = ConfigDict(frozen=True)

    text: str
    box: Box
    country: str | None = None  # what the format reading says the plate is (None: no format fitted)
    format: str | None = None
    recognizer: str | None = None  # which recognizer's read was kept


class PlateRead(BaseModel):
    """One labelled plate and the prediction paired with it (read None: not found)."""

    expected: str | None
    read: str | None
    iou: float | None  # None when not found, or paired by text
    country: str | None = None  # the paired prediction's, as in Prediction
    format: str | None = None
    recognizer: str | None = None


class ImageScore(BaseModel):
    """One image's row of the report."""

    file: str
    status: str  # Triton's frame status: "ok", or why it rejected the frame
    matched_by: Literal["box", "text", "crop"]  # crop: the picture is the plate, read whole
    country: str | None = None  # whose plates the labels say these are
    labelled: int  # labelled plate boxes
    found: int
    found_loose: int = 0  # at IoU >= LOOSE_IOU_THRESHOLD
    texts_labelled: int  # labelled plates with a known text
    texts_exact: int
    texts_within_one: int
    char_errors: int
    char_total: int
    other_boxes: int  # predictions paired with no labelled plate
    plates: list[PlateRead]
    other_texts: list[str]


class Totals(BaseModel):
    """The figures over every image; a rate is None when there is nothing to divide by."""

    images: int
    rejected: int
    plates_labelled: int
    plates_found: int
    found_rate: float | None
    plates_found_loose: int = 0
    found_loose_rate: float | None = None  # at IoU >= LOOSE_IOU_THRESHOLD
    mean_iou: float | None
    texts_labelled: int
    texts_exact: int
    exact_rate: float | None
    texts_within_one: int
    within_one_rate: float | None
    char_errors: int
    char_total: int
    char_error_rate: float | None
    char_accuracy: float | None = None  # 1 - char_error_rate
    other_boxes: int
    images_matched_by_text: int


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes; 0 when either has no area."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, width) * max(0.0, height)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _pair_greedily(candidates: list[tuple[float, int, int]]) -> dict[int, int]:
    """Label index -> prediction index, taking (cost, label, prediction) cheapest first, one to one."""
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for _, label, prediction in sorted(candidates):
        if label not in pairs and prediction not in taken:
            pairs[label] = prediction
            taken.add(prediction)
    return pairs


def match_boxes(
    labelled: Sequence[Box], predicted: Sequence[Box], threshold: float = IOU_THRESHOLD
) -> dict[int, tuple[int, float]]:
    """Label index -> (prediction index, IoU) for pairs with IoU >= threshold, best IoU first."""
    overlaps = {
        (i, j): iou(label, prediction)
        for i, label in enumerate(labelled)
        for j, prediction in enumerate(predicted)
    }
    pairs = _pair_greedily([(-value, i, j) for (i, j), value in overlaps.items() if value >= threshold])
    return {i: (j, overlaps[i, j]) for i, j in pairs.items()}


def match_texts(labelled: Sequence[str], predicted: Sequence[str]) -> dict[int, int]:
    """Label index -> prediction index, closest text first (for plates labelled without boxes)."""
    return _pair_greedily(
        [
            (edit_distance(label, prediction), i, j)
            for i, label in enumerate(labelled)
            for j, prediction in enumerate(predicted)
        ]
    )


def score_image(
    file: str,
    label: ImageLabel,
    status: str,
    predictions: Sequence[Prediction],
    country: str | None = None,
) -> ImageScore:
    """Pair `predictions` with `label`'s plates and count what was found and read."""
    predictions = predictions if status == FRAME_OK else ()
    texts = label.texts
    loose = 0
    if label.boxes is not None:
        box_pairs = match_boxes(label.boxes, [p.box for p in predictions])
        pairs = {i: j for i, (j, _) in box_pairs.items()}
        ious = {i: value for i, (_, value) in box_pairs.items()}
        loose = len(match_boxes(label.boxes, [p.box for p in predictions], LOOSE_IOU_THRESHOLD))
    else:
        pairs = match_texts([text or "" for text in texts], [p.text for p in predictions])
        ious = {}
    plates = [
        _plate_read(expected, predictions[pairs[i]] if i in pairs else None, ious.get(i))
        for i, expected in enumerate(texts)
    ]
    known = [(plate.expected, plate.read) for plate in plates if plate.expected is not None]
    distances = [len(expected) if read is None else edit_distance(read, expected) for expected, read in known]
    paired = set(pairs.values())
    return ImageScore(
        file=file,
        status=status,
        matched_by="box" if label.boxes is not None else "text",
        country=country,
        labelled=len(label.boxes or ()),
        found=len(ious),
        found_loose=loose,
        texts_labelled=len(known),
        texts_exact=sum(read == expected for expected, read in known),
        texts_within_one=sum(
            read is not None and distance <= 1 for (_, read), distance in zip(known, distances, strict=True)
        ),
        char_errors=sum(distances),
        char_total=sum(len(expected) for expected, _ in known),
        other_boxes=len(predictions) - len(paired),
        plates=plates,
        other_texts=[p.text for j, p in enumerate(predictions) if j not in paired],
    )


def _plate_read(expected: str | None, prediction: Prediction | None, iou_value: float | None) -> PlateRead:
    if prediction is None:
        return PlateRead(expected=expected, read=None, iou=None)
    return PlateRead(
        expected=expected,
        read=prediction.text,
        iou=iou_value,
        country=prediction.country,
        format=prediction.format,
        recognizer=prediction.recognizer,
    )


def score_crop(
    file: str, plate: str, country: str | None, status: str, predictions: Sequence[Prediction]
) -> ImageScore:
    """A crop whose whole picture is the plate `plate`: its one read (the first, should Triton
    answer more) against the text; no box to find."""
    label = ImageLabel(plates=[plate], boxes=None)
    score = score_image(file, label, status, list(predictions[:1]), country)
    return score.model_copy(update={"matched_by": "crop"})


def _rate(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def totals(scores: Sequence[ImageScore]) -> Totals:
    """The folder's figures from its rows."""
    found_ious = [plate.iou for score in scores for plate in score.plates if plate.iou is not None]
    plates_labelled = sum(score.labelled for score in scores)
    found_loose = sum(score.found_loose for score in scores)
    texts_labelled = sum(score.texts_labelled for score in scores)
    char_total = sum(score.char_total for score in scores)
    exact = sum(score.texts_exact for score in scores)
    within_one = sum(score.texts_within_one for score in scores)
    char_errors = sum(score.char_errors for score in scores)
    return Totals(
        images=len(scores),
        rejected=sum(score.status != FRAME_OK for score in scores),
        plates_labelled=plates_labelled,
        plates_found=len(found_ious),
        found_rate=_rate(len(found_ious), plates_labelled),
        plates_found_loose=found_loose,
        found_loose_rate=_rate(found_loose, plates_labelled),
        mean_iou=_rate(sum(found_ious), len(found_ious)),
        texts_labelled=texts_labelled,
        texts_exact=exact,
        exact_rate=_rate(exact, texts_labelled),
        texts_within_one=within_one,
        within_one_rate=_rate(within_one, texts_labelled),
        char_errors=char_errors,
        char_total=char_total,
        char_error_rate=_rate(char_errors, char_total),
        char_accuracy=None if not char_total else 1 - char_errors / char_total,
        other_boxes=sum(score.other_boxes for score in scores),
        images_matched_by_text=sum(score.matched_by == "text" for score in scores),
    )


def totals_by_country(scores: Sequence[ImageScore]) -> dict[str, Totals]:
    """The figures of each country the labels name, in code order (none when no label names one)."""
    countries = sorted({score.country for score in scores if score.country is not None})
    return {country: totals([s for s in scores if s.country == country]) for country in countries}


def unmet_thresholds(totals: Totals, min_found: float | None, min_exact: float | None) -> list[str]:
    """Why the run falls short of the asked minimum rates; a rate with nothing to measure falls short."""
    checks = (("plates found", totals.found_rate, min_found), ("exact texts", totals.exact_rate, min_exact))
    return [
        f"{name}: {'nothing labelled to measure' if rate is None else f'{rate:.1%}'} < {minimum:.1%}"
        for name, rate, minimum in checks
        if minimum is not None and (rate is None or rate < minimum)
    ]
