"""What one `eval` run will do, settled before any server starts: the folder's layout, its labelled
items (each knowing how to score its answer), and the region their plates are read for.

The region: `--region` when given; else a crops or scenes folder's own country when it is a known
region (`us-crops` -> `us`), `auto` when it has none; a `labels.json` folder or clips (the
Russian evalset and videos) read as a camera without a region does (DEFAULT_REGION).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from stream_worker.contracts.plate_formats import AUTO_REGION, DEFAULT_REGION, Region, known_regions, region
from stream_worker.evaluation.clips import load_clip_frames
from stream_worker.evaluation.crops import load_crop_labels
from stream_worker.evaluation.labels import ImageLabel, load_labels
from stream_worker.evaluation.layouts import Layout, detect_layout, folder_country
from stream_worker.evaluation.scoring import ImageScore, Prediction, score_crop, score_image
from stream_worker.evaluation.settings import EvalSettings
from stream_worker.evaluation.voc import load_voc_labels

Scorer = Callable[[str, Sequence[Prediction]], ImageScore]  # (frame status, predictions) -> row


@dataclass(frozen=True)
class EvalItem:
    file: str  # inside the folder (a clip's frame: `<clip>#<index>`)
    score: Scorer
    jpeg: bytes | None = None  # the frame itself when it is not a file of the folder (clips)


@dataclass(frozen=True)
class EvalPlan:
    layout: Layout
    region: Region
    raw: bool  # score Triton's unconstrained reads instead of the format reading
    items: list[EvalItem]


def default_region(layout: Layout, country: str | None) -> str:
    if layout in (Layout.PHOTOS, Layout.CLIPS):
        return DEFAULT_REGION
    return country if country in known_regions() else AUTO_REGION


def _items(layout: Layout, settings: EvalSettings, country: str | None) -> list[EvalItem]:
    folder = settings.folder
    if layout is Layout.CROPS:
        return [
            EvalItem(crop.file, partial(score_crop, crop.file, crop.plate, crop.country or country))
            for crop in load_crop_labels(folder)
        ]
    if layout is Layout.CLIPS:
        return [
            EvalItem(
                frame.name,
                partial(score_image, frame.name, ImageLabel(plates=[frame.plate]), country=country),
                frame.jpeg,
            )
            for frame in load_clip_frames(folder)
        ]
    labels = load_labels(folder) if layout is Layout.PHOTOS else load_voc_labels(folder)
    return [
        EvalItem(name, partial(score_image, name, label, country=country)) for name, label in labels.items()
    ]


def plan_eval(settings: EvalSettings) -> EvalPlan:
    """The run's plan; LabelsError (bad folder or labels) or UnknownRegionError."""
    layout = detect_layout(settings.folder)
    country = folder_country(settings.folder)
    chosen = region(settings.region or default_region(layout, country))
    return EvalPlan(layout, chosen, settings.raw, _items(layout, settings, country))
