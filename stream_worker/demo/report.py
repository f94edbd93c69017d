"""What the demo shows: the live table of plate events, dead letters, sightings and alerts, and the
summary.

Pure functions over the records read back, so the formatting and the statistics are unit-tested
without servers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from stream_worker.cameras.status import CameraStatus


@dataclass(frozen=True, slots=True)
class Arrival:
    """One event the notify service delivered to the demo's webhook (its first arrival: a retry
    repeats the event id)."""

    event_id: str
    kind: str  # X-Stream-Worker-Kind: alert, unknown_vehicle, allowed_vehicle
    plate: str
    camera_id: str
    signature_ok: bool  # X-Stream-Worker-Signature is the HMAC of the body with the run's secret
    picture_url: str | None = None


@dataclass
class Results:
    """Events, dead letters, sightings and alerts read back, deduplicated (at-least-once may repeat a
    record)."""

    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    dead_letters: dict[str, dict[str, str]] = field(default_factory=dict)
    sightings: dict[str, dict[str, Any]] = field(default_factory=dict)
    alerts: dict[str, dict[str, Any]] = field(default_factory=dict)
    first_published_at: float | None = None
    last_received_at: float | None = None
    never_delivered: int = 0  # published frames the broker never delivered to the worker
    plate_pictures: int = 0  # plate pictures written (events' plates and sightings' best reads)
    plate_pictures_dir: Path | None = None
    connector_cameras: frozenset[str] = frozenset()  # their frames are the connector's, not the demo's
    webhook: dict[str, Arrival] | None = None  # by event id; None: no webhook (no line)

    @property
    def undelivered(self) -> list[str]:
        """The alerts that did not reach the demo's webhook, or not with a valid signature."""
        arrivals = self.webhook or {}
        return [
            alert_id
            for alert_id in self.alerts
            if alert_id not in arrivals or not arrivals[alert_id].signature_ok
        ]

    @property
    def accounted(self) -> int:
        """Results of the frames the demo published (the simulated cameras')."""
        return self.results - self.connector_results

    @property
    def connector_results(self) -> int:
        """Results of the frames the camera connector published (the video cameras')."""
        cameras = self.connector_cameras
        if not cameras:
            return 0
        return sum(1 for event in self.events.values() if event["camera_id"] in cameras) + sum(
            1 for headers in self.dead_letters.values() if headers.get("camera_id") in cameras
        )

    @property
    def results(self) -> int:
        """Every plate event and dead letter, whoever published the frame."""
        return len(self.events) + len(self.dead_letters)

    def add_event(self, event: dict[str, Any], received_at: float) -> bool:
        """False for a duplicate (same `event_id`)."""
        if event["event_id"] in self.events:
            return False
        self.events[event["event_id"]] = event
        self.last_received_at = received_at
        return True

    def add_sighting(self, sighting: dict[str, Any]) -> bool:
        """False for a duplicate (same `sighting_id`)."""
        if sighting["sighting_id"] in self.sightings:
            return False
        self.sightings[sighting["sighting_id"]] = sighting
        return True

    def add_alert(self, alert: dict[str, Any]) -> bool:
        """False for a duplicate (same `alert_id`)."""
        if alert["alert_id"] in self.alerts:
            return False
        self.alerts[alert["alert_id"]] = alert
        return True

    def add_dead_letter(self, headers: dict[str, str], received_at: float) -> bool:
        source = ":".join(headers.get(f"source.{part}", "?") for part in ("topic", "partition", "offset"))
        if source in self.dead_letters:
            return False
        self.dead_letters[source] = headers
        self.last_received_at = received_at
        return True


TABLE_COLUMNS = (("camera", 8), ("frame", 16), ("plate", 11), ("conf", 6), ("latency ms", 10))


def table_header() -> str:
    return "  ".join(f"{name:<{width}}" for name, width in TABLE_COLUMNS).rstrip()


def _row(*cells: str) -> str:
    return "  ".join(
        f"{cell:<{width}}" for cell, (_, width) in zip(cells, TABLE_COLUMNS, strict=False)
    ).rstrip()


def event_rows(event: dict[str, Any]) -> list[str]:
    """One table row per plate of the event (one row saying so when it has none)."""
    latency = f"{event['latency_ms']:.0f}"
    if not event["plates"]:
        return [_row(event["camera_id"], event["frame_id"], "(no plate)", "", latency)]
    return [
        _row(event["camera_id"], event["frame_id"], plate["text"], f"{plate['confidence']:.2f}", latency)
        + (f"  zone {plate['zone']}" if plate.get("zone") else "")
        for plate in event["plates"]
    ]


def dead_letter_row(headers: dict[str, str]) -> str:
    row = _row(headers.get("camera_id", "?"), headers.get("frame_id", "?"), "DEAD LETTER", "-", "-")
    return f"{row}  {headers.get('error.reason', '?')}: {headers.get('error.detail', '')}".rstrip()


def sighting_row(sighting: dict[str, Any]) -> str:
    """A vehicle pass: its voted text among the frames' rows, with its reads and direction."""
    seen_s = (
        datetime.fromisoformat(sighting["last_seen"]) - datetime.fromisoformat(sighting["first_seen"])
    ).total_seconds()
    row = _row(sighting["camera_id"], "SIGHTING", sighting["text"], f"{sighting['confidence']:.2f}", "")
    direction = sighting["direction"] or "one time"
    closed_by = sighting["closed_by"]
    zone = (sighting.get("best_read") or {}).get("zone")
    where = f", zone {zone}" if zone else ""
    return f"{row}  {sighting['reads']} reads over {seen_s:.1f} s, {direction}{where}, closed by {closed_by}"


def alert_row(alert: dict[str, Any]) -> str:
    """A watch-listed plate passed: the entry (list, label) and how the read matched it."""
    row = _row(alert["camera_id"], "ALERT", alert["plate"], f"{alert['confidence']:.2f}", "")
    entry = f"({alert['list']}: {alert['label']})" if alert.get("label") else f"({alert['list']})"
    if alert["match_kind"] == "exact":
        return f"{row}  {entry} exact"
    return f"{row}  {entry} {alert['match_kind']} {alert['distance']:g} from {alert['candidate']}"


def _alerts_summary(alerts: Sequence[dict[str, Any]]) -> str:
    """`N (PLATE on LIST: KIND xN, ...; ...)`, entries by count."""
    if not alerts:
        return "none"
    by_entry = Counter((alert["plate"], alert["list"]) for alert in alerts)
    parts = []
    for (plate, list_name), _ in by_entry.most_common():
        kinds = Counter(a["match_kind"] for a in alerts if (a["plate"], a["list"]) == (plate, list_name))
        parts.append(f"{plate} on {list_name}: " + ", ".join(f"{k} x{n}" for k, n in kinds.most_common()))
    return f"{len(alerts)} ({'; '.join(parts)})"


def webhook_lines(results: Results) -> list[str]:
    """What the notify service delivered to the demo's webhook: a count, then each arrival (plate,
    camera, event id, whether its signature checked)."""
    arrivals = results.webhook or {}
    arrived = sum(1 for alert_id in results.alerts if alert_id in arrivals)
    checked = sum(arrival.signature_ok for arrival in arrivals.values())
    lines = [
        f"webhook           {arrived} of {len(results.alerts)} alerts arrived at the demo's webhook "
        f"(notify), {checked} of {len(arrivals)} signatures checked"
    ]
    for arrival in sorted(arrivals.values(), key=lambda a: (a.camera_id, a.plate, a.event_id)):
        signed = "signature checked" if arrival.signature_ok else "signature WRONG"
        picture = f", picture {arrival.picture_url}" if arrival.picture_url else ""
        lines.append(
            f"  {arrival.kind} {arrival.plate} at {arrival.camera_id}, event {arrival.event_id}, "
            f"{signed}{picture}"
        )
    return lines


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


def _end_to_end_ms(event: dict[str, Any]) -> float | None:
    if not event.get("captured_at"):
        return None
    captured = datetime.fromisoformat(event["captured_at"])
    processed = datetime.fromisoformat(event["processed_at"])
    return (processed - captured).total_seconds() * 1000


@dataclass(frozen=True)
class ConnectorSummary:
    """The video cameras' part: frames the connector published (read back) and each camera's last
    status record."""

    frames: int
    statuses: Sequence[CameraStatus] = ()
    clips: dict[str, str] = field(default_factory=dict)  # camera id -> clip file name


def connector_lines(results: Results, connector: ConnectorSummary) -> list[str]:
    cameras = sorted(results.connector_cameras)
    events = sum(1 for event in results.events.values() if event["camera_id"] in results.connector_cameras)
    dead = results.connector_results - events
    names = ", ".join(f"{camera} ({connector.clips[camera]})" if camera in connector.clips else camera
                      for camera in cameras)  # fmt: skip
    lines = [
        f"connector frames  {connector.frames} by {names}, read back from the frames topic "
        f"(not in 'frames published'): {events} plate events, {dead} dead letters, "
        f"missing {max(0, connector.frames - results.connector_results)}"
    ]
    for status in connector.statuses:
        lines.append(
            f"camera {status.camera_id:<10} {status.state}: {status.frames_decoded} frames decoded, "
            f"{status.frames_published} published, {status.frames_static} static (motion gate), "
            f"{status.frames_dropped} dropped, {status.reconnects} reconnects"
        )
    return lines


def summary_lines(
    results: Results,
    published: int,
    cameras: int,
    produce_seconds: float,
    connector: ConnectorSummary | None = None,
) -> list[str]:
    """The closing summary: counts, plate texts, dead-letter reasons, throughput, latencies. With
    the camera connector, its frames and results are counted apart and make part of `missing`."""
    events = list(results.events.values())
    with_plates = sum(1 for event in events if event["plates"])
    plates = Counter(plate["text"] for event in events for plate in event["plates"])
    reasons = Counter(headers.get("error.reason", "?") for headers in results.dead_letters.values())
    missing = max(0, published - results.accounted)
    if connector is not None:
        missing += max(0, connector.frames - results.connector_results)
    lines = [
        f"frames published  {published} by {cameras} camera(s) in {produce_seconds:.1f} s",
        *(connector_lines(results, connector) if connector is not None else []),
        f"plate events      {len(events)} ({with_plates} with a plate, {len(events) - with_plates} without)",
        "plates read       " + (", ".join(f"{text} x{n}" for text, n in plates.most_common()) or "none"),
        f"dead letters      {len(results.dead_letters)}"
        + (
            " (" + ", ".join(f"{reason} x{n}" for reason, n in reasons.most_common()) + ")" if reasons else ""
        ),
        "sightings         "
        + (
            f"{len(results.sightings)} from {sum(s['reads'] for s in results.sightings.values())} reads ("
            + ", ".join(
                f"{text} x{n}"
                for text, n in Counter(s["text"] for s in results.sightings.values()).most_common()
            )
            + ")"
            if results.sightings
            else "none"
        ),
        "alerts            " + _alerts_summary(list(results.alerts.values())),
        *(webhook_lines(results) if results.webhook is not None else []),
        *(
            [f"plate pictures    {results.plate_pictures} in {results.plate_pictures_dir}"]
            if results.plate_pictures_dir is not None
            else []
        ),
        f"missing           {missing}"
        + (
            f" (never delivered to the worker by the broker: {results.never_delivered})"
            if results.never_delivered
            else ""
        ),
    ]
    if results.first_published_at is not None and results.last_received_at is not None:
        span = max(results.last_received_at - results.first_published_at, 1e-6)
        lines.append(
            f"throughput        {results.results / span:.1f} frames/s (first frame sent to last result)"
        )
    if events:
        worker = [float(event["latency_ms"]) for event in events]
        lines.append(
            f"latency (worker)  p50 {percentile(worker, 0.5):.0f} ms, p99 {percentile(worker, 0.99):.0f} ms"
        )
        end_to_end = [ms for event in events if (ms := _end_to_end_ms(event)) is not None]
        if end_to_end:
            lines.append(
                f"latency (camera)  p50 {percentile(end_to_end, 0.5):.0f} ms, "
                f"p99 {percentile(end_to_end, 0.99):.0f} ms (captured_at to processed_at)"
            )
    return lines
