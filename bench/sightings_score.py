"""Scoring `stream-worker bench sightings`: what the run published against the labelled passes
(per frame and per sighting exact texts, splits, extras, sightings from outside the pass's track,
what each publishing rule would have kept) and the printed report. Pure: no Kafka, no servers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.masks import inside, pass_region
from bench.passes import ScenePass
from bench.report import format_table
from stream_worker.evaluation.scoring import iou, match_boxes

IOU_THRESHOLD = 0.5


@dataclass
class PlannedPass:
    scene: ScenePass
    camera_id: str
    start_ms: int  # capture time of its first frame, epoch ms
    frame_ids: list[str]


@dataclass
class Outputs:
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # frame_id -> PlateEvent
    dead_letters: set[str] = field(default_factory=set)  # frame ids
    sightings: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)  # PlateAlerts as received (repeats too)
    published: dict[str, float] = field(default_factory=dict)  # frame_id -> epoch s it was produced


def score(planned: Sequence[PlannedPass], outputs: Outputs) -> dict[str, Any]:
    """Per-frame and per-sighting exact-text figures (see the module's docstring)."""
    frame_plates = frame_exact = 0
    plates = exact = one_sighting = split = missed = direction_right = 0
    rows = []
    by_frame = frames_of(planned)
    owned: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (photo, label index) -> sightings
    extra: list[dict[str, Any]] = []  # sightings on no labelled plate
    outside: list[dict[str, Any]] = []  # sightings from outside their pass's kept region
    regions = {item.scene.name: pass_region(item.scene) for item in planned}
    for sighting in outputs.sightings:
        where = by_frame.get(sighting["best_read"]["frame_id"])
        region = None if where is None else regions[where[0].scene.name]
        if region is not None and not inside(region, box_of(sighting["best_read"])):
            outside.append(sighting)
        owner = plate_of(by_frame, sighting["best_read"])
        if owner is None:
            extra.append(sighting)
        else:
            owned.setdefault((owner[0].scene.name, owner[1]), []).append(sighting)
    labelled: list[tuple[str, list[dict[str, Any]]]] = []  # (expected text, its sightings)
    for item in planned:
        texts = item.scene.texts
        for frame_id, frame in zip(item.frame_ids, item.scene.frames, strict=True):
            event = outputs.events.get(frame_id)
            predicted = [] if event is None else event["plates"]
            pairs = match_boxes(frame.boxes, [box_of(p) for p in predicted])
            for i, text in enumerate(texts):
                if text is not None:
                    frame_plates += 1
                    frame_exact += i in pairs and predicted[pairs[i][0]]["text"] == text
        for i, text in enumerate(texts):
            if text is None:
                continue
            plates += 1
            mine = sorted(owned.get((item.scene.name, i), []), key=lambda s: -s["reads"])
            labelled.append((text, mine))
            voted = mine[0] if mine else None
            right = voted is not None and voted["text"] == text
            exact += right
            one_sighting += len(mine) == 1
            split += len(mine) > 1
            missed += not mine
            direction_right += voted is not None and voted["direction"] == item.scene.kind.value
            rows.append(
                {
                    "photo": item.scene.name,
                    "kind": item.scene.kind.value,
                    "expected": text,
                    "frames_exact": sum(
                        read_in(outputs.events.get(fid), frame.boxes, i) == text
                        for fid, frame in zip(item.frame_ids, item.scene.frames, strict=True)
                    ),
                    "frames": len(item.frame_ids),
                    "sightings": len(mine),
                    "all_sightings": [f"{x['text']} ({x['reads']} reads)" for x in mine],
                    "voted": voted["text"] if voted else None,
                    "confidence": voted["confidence"] if voted else None,
                    "reads": voted["reads"] if voted else None,
                    "direction": voted["direction"] if voted else None,
                    "exact": right,
                }
            )
    return {
        "frames": {
            "plates": frame_plates,
            "exact": frame_exact,
            "exact_rate": rate(frame_exact, frame_plates),
        },
        "sightings": {
            "plates": plates,
            "exact": exact,
            "exact_rate": rate(exact, plates),
            "without_exact": plates - exact,
            "one_sighting": one_sighting,
            "split": split,
            "missed": missed,
            "extra": len(extra),
            "extra_texts": [x["text"] for x in extra],
            "extra_reads": [x["reads"] for x in extra],
            "outside_kept": len(outside),
            "outside_kept_texts": [x["text"] for x in outside],
            "direction_right": direction_right,
            "direction_rate": rate(direction_right, plates - missed),
        },
        "plates": rows,
        "publish_rules": {name: _under_rule(labelled, extra, keep) for name, keep in PUBLISH_RULES.items()},
    }


# What the service could publish: each rule keeps a sighting or drops it (min_reads and the like),
# scored from this one run, since such a rule drops whole sightings and changes no grouping.
PUBLISH_RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    "every sighting": lambda s: True,
    "2+ reads": lambda s: s["reads"] >= 2,
    "3+ reads": lambda s: s["reads"] >= 3,
    "2+ reads, or 1 in a valid format": lambda s: s["reads"] >= 2 or s["format_valid"],
}


def _under_rule(
    labelled: list[tuple[str, list[dict[str, Any]]]],
    extra: list[dict[str, Any]],
    keep: Callable[[dict], bool],
) -> dict[str, int]:
    exact = missed = 0
    for text, mine in labelled:
        kept = [s for s in mine if keep(s)]
        voted = max(kept, key=lambda s: s["reads"], default=None)
        exact += voted is not None and voted["text"] == text
        missed += voted is None
    return {"exact": exact, "missed": missed, "extra": sum(map(keep, extra))}


def frames_of(planned: Sequence[PlannedPass]) -> dict[str, tuple[PlannedPass, int]]:
    return {frame_id: (item, k) for item in planned for k, frame_id in enumerate(item.frame_ids)}


def plate_of(
    by_frame: dict[str, tuple[PlannedPass, int]], read: dict[str, Any]
) -> tuple[PlannedPass, int] | None:
    """The pass and label index of the plate a read (frame_id, box) lies on, or None."""
    where = by_frame.get(read["frame_id"])
    if where is None:
        return None
    item, k = where
    overlaps = [iou(label_box, box_of(read)) for label_box in item.scene.frames[k].boxes]
    best = max(range(len(overlaps)), key=overlaps.__getitem__, default=None)
    if best is None or overlaps[best] < IOU_THRESHOLD:
        return None
    return item, best


def box_of(plate: dict[str, Any]) -> tuple[float, float, float, float]:
    box = plate["box"]
    return box["x1"], box["y1"], box["x2"], box["y2"]


def read_in(
    event: dict[str, Any] | None, boxes: list[tuple[float, float, float, float]], index: int
) -> str | None:
    if event is None:
        return None
    pairs = match_boxes(boxes, [box_of(p) for p in event["plates"]])
    return event["plates"][pairs[index][0]]["text"] if index in pairs else None


def rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def render(report: dict[str, Any]) -> str:
    frames, sightings = report["frames"], report["sightings"]
    side_by_side = [{"unit": "frame", **frames}, {"unit": "sighting", **sightings}]
    wrong = [row for row in report["plates"] if not row["exact"]]
    lines = [
        f"{report['passes']} passes, {report['frame_count']} frames, {report['duration_s']} s; load average "
        f"before/after {report['load_average']['before']} / {report['load_average']['after']}"
        + (" - BUSY (figures inflated)" if report["busy"] else ""),
        *(
            [
                f"masks: {report['masks']['polygons']} on {report['masks']['cameras']} cameras "
                "(a camera per pass, masking the frame outside its plates' track)"
            ]
            if report.get("masks")
            else []
        ),
        "",
        "exact text, per frame and per sighting:",
        format_table(side_by_side, ["unit", "plates", "exact", "exact_rate"]),
        "",
        f"passes with one sighting: {sightings['one_sighting']}, split: {sightings['split']}, "
        f"without: {sightings['missed']}; sightings of no labelled plate: {sightings['extra']}; "
        f"direction right: {sightings['direction_right']} ({sightings['direction_rate']})",
        f"labelled plates with an exact sighting: {sightings['exact']}, without: "
        f"{sightings['without_exact']} (of which no sighting: {sightings['missed']}); sightings from "
        f"outside the pass's plates' track: {sightings['outside_kept']}",
    ]
    rules = [{"publish": name, **figures} for name, figures in report["publish_rules"].items()]
    lines += [
        "",
        "sightings per publishing rule:",
        format_table(rules, ["publish", "exact", "missed", "extra"]),
    ]
    if wrong:
        columns = ["photo", "kind", "expected", "voted", "frames_exact", "frames", "sightings", "reads"]
        lines += ["", "plates whose sighting is not exact:", format_table(wrong, columns)]
    return "\n".join(lines)
