"""The alerts part of `stream-worker bench sightings --alerts`: which labelled plates go on the
watch list, how the service's alerts score against the labelled passes (recall, false alerts,
duplicates, latency), and the same run's PlateEvents replayed through the service's own pass
rules at several matching tolerances, to choose the default from figures.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bench.report import format_table, latency_ms
from bench.sightings_score import Outputs, PlannedPass, frames_of, plate_of, rate
from stream_worker.alerts.passes import AlertEngine, PassRules
from stream_worker.contracts import PlateEvent
from stream_worker.contracts.topics import PLATES
from stream_worker.contracts.watchlist import WatchEntry, normalise_plate
from stream_worker.plates.matching import Matcher

WATCHLIST_NAME = "bench"
TOLERANCES = (0.0, 0.5, 1.0, 1.5, 2.0)  # the offline table's default_max_distance values


def watch_entries(planned: Sequence[PlannedPass], seed: int) -> list[WatchEntry]:
    """Half of the labelled plates (rounded down, chosen by `seed`), listed with their true text."""
    texts = sorted({normalise_plate(t) for item in planned for t in item.scene.texts if t is not None})
    chosen = sorted(random.Random(seed).sample(texts, len(texts) // 2))
    now = datetime.now(UTC)
    return [WatchEntry(plate=text, list=WATCHLIST_NAME, added_at=now) for text in chosen]


def score_alerts(
    planned: Sequence[PlannedPass], outputs: Outputs, listed: set[str], timed: bool = True
) -> dict[str, Any]:
    """Alerts against the labelled plates' passes (see the module's docstring); `timed`: latencies
    too (not for alerts replayed offline)."""
    by_frame = frames_of(planned)
    unique: dict[str, dict[str, Any]] = {}
    for alert in outputs.alerts:
        unique.setdefault(alert["alert_id"], alert)
    hits: dict[tuple[str, int], list[dict[str, Any]]] = {}
    wrong_entry = unlisted = no_plate = unjudged = 0
    false_texts = []
    for alert in unique.values():
        owner = plate_of(by_frame, alert)
        text = None if owner is None else owner[0].scene.texts[owner[1]]
        if owner is not None and text is None:
            unjudged += 1  # on a plate labelled without a text: neither right nor wrong
        elif owner is not None and normalise_plate(text) == alert["plate"]:
            hits.setdefault((owner[0].scene.name, owner[1]), []).append(alert)
        else:
            false_texts.append(f"{alert['candidate']}->{alert['plate']}")
            if owner is None:
                no_plate += 1
            elif normalise_plate(text) in listed:
                wrong_entry += 1
            else:
                unlisted += 1
    listed_passes = unlisted_passes = 0
    from_publish: list[float] = []
    from_event: list[float] = []
    for item in planned:
        for i, text in enumerate(item.scene.texts):
            if text is None:
                continue
            if normalise_plate(text) not in listed:
                unlisted_passes += 1
                continue
            listed_passes += 1
            mine = hits.get((item.scene.name, i))
            if not (mine and timed):
                continue
            alerted = min(_epoch_s(a["alerted_at"]) for a in mine)
            published = [outputs.published[f] for f in item.frame_ids if f in outputs.published]
            if published:
                from_publish.append(alerted - min(published))
            events = [outputs.events[f] for f in item.frame_ids if f in outputs.events]
            if events:
                from_event.append(alerted - min(_epoch_s(e["processed_at"]) for e in events))
    false_alerts = wrong_entry + unlisted + no_plate
    figures: dict[str, Any] = {
        "listed_passes": listed_passes,
        "alerted": len(hits),
        "recall": rate(len(hits), listed_passes),
        "unlisted_passes": unlisted_passes,
        "false_alerts": false_alerts,
        "false_rate": rate(false_alerts, unlisted_passes),
        "false_on_unlisted": unlisted,
        "false_wrong_entry": wrong_entry,
        "false_on_no_plate": no_plate,
        "false_texts": false_texts,
        "unjudged": unjudged,
        "duplicates": sum(len(mine) - 1 for mine in hits.values()),
        "passes_with_duplicates": sum(len(mine) > 1 for mine in hits.values()),
        "repeated_ids": len(outputs.alerts) - len(unique),
        # origin "sighting": raised by a pass's voted sighting after none of its reads matched
        "from_sightings": sum(alert.get("origin") == "sighting" for alert in unique.values()),
        "missed": sorted(
            text
            for item in planned
            for i, text in enumerate(item.scene.texts)
            if text is not None and normalise_plate(text) in listed and (item.scene.name, i) not in hits
        ),
    }
    if timed:
        figures["latency_from_publish"] = latency_ms(from_publish)
        figures["latency_from_event"] = latency_ms(from_event)
    return figures


def replay_alerts(
    outputs: Outputs, entries: Sequence[WatchEntry], tolerance: float, rules: PassRules = PassRules()
) -> list[dict[str, Any]]:
    """The alerts the service's pass rules raise from this run's PlateEvents at `tolerance` (each
    camera's events in capture order, one partition; passes end on capture time only)."""
    matcher = Matcher(entries, tolerance)
    engine = AlertEngine(PLATES.name, rules)
    engine.assign(0)
    events = sorted(
        (PlateEvent.model_validate(e) for e in outputs.events.values()),
        key=lambda e: (e.camera_id, e.captured_at or e.processed_at, e.frame_id),
    )
    alerts = []
    for offset, event in enumerate(events):
        for outgoing in engine.add(0, offset, event, matcher, float(offset)):
            alerts.append(outgoing.alert.model_dump(mode="json"))
    return alerts


def tolerance_table(
    planned: Sequence[PlannedPass], outputs: Outputs, entries: Sequence[WatchEntry]
) -> list[dict[str, Any]]:
    listed = {entry.plate for entry in entries}
    rows = []
    for tolerance in TOLERANCES:
        replayed = Outputs(events=outputs.events, alerts=replay_alerts(outputs, entries, tolerance))
        figures = score_alerts(planned, replayed, listed, timed=False)
        rows.append({"tolerance": tolerance, **{k: v for k, v in figures.items() if k != "missed"}})
    return rows


def _epoch_s(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def render_alerts(alerts: dict[str, Any]) -> list[str]:
    service = alerts["service"]
    columns = ["listed_passes", "alerted", "recall", "unlisted_passes", "false_alerts", "false_rate"]
    columns += ["false_on_unlisted", "false_wrong_entry", "false_on_no_plate", "duplicates"]
    latency = ["p50_ms", "p99_ms", "max_ms"]
    lines = [
        f"alerts from the service ({len(alerts['listed'])} plates listed, default tolerance):",
        format_table([service], columns),
        f"passes with duplicates: {service['passes_with_duplicates']}, alerts repeated with their id: "
        f"{service['repeated_ids']}, on plates labelled without a text: {service['unjudged']}, "
        f"raised by a sighting (origin sighting): {service.get('from_sightings', 0)}",
        f"listed plates never alerted: {', '.join(service['missed']) or '-'}",
        f"false alerts (read->entry): {', '.join(service['false_texts']) or '-'}",
        "latency to the alert, per alerted pass:",
        format_table(
            [
                {"from": "first frame published", **service["latency_from_publish"]},
                {"from": "first PlateEvent", **service["latency_from_event"]},
            ],
            ["from", *latency],
        ),
        "",
        "the same reads replayed offline, per matching tolerance (default_max_distance):",
        format_table(alerts["tolerances"], ["tolerance", *columns]),
    ]
    return lines
