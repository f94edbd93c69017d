"""What an event says to a person, in one line: an e-mail's subject, a Slack or Teams message."""

from __future__ import annotations

from typing import Any

import orjson

from stream_worker.contracts.notify import WebhookFormat
from stream_worker.notify.rules import EventKind

TITLES = {
    EventKind.ALERT: "Watch-list alert",
    EventKind.UNKNOWN_VEHICLE: "Unknown vehicle",
    EventKind.ALLOWED_VEHICLE: "Allowed vehicle",
    EventKind.OVERSTAY: "Overstay",
}


def headline(kind: EventKind, event: dict[str, Any]) -> str:
    """`Watch-list alert: B840CK197 at gate-1 (stolen)`, `Unknown vehicle: X999YX99 at gate`,
    `Overstay: B840CK197 at depot, 2h00m on site (limit 2h00m)`."""
    plate = event.get("plate") or event.get("text") or "?"
    if kind is EventKind.OVERSTAY:
        stayed, limit = _duration(event.get("dwell_s")), _duration(event.get("overstay_s"))
        return f"{TITLES[kind]}: {plate} at {event.get('site', '?')}, {stayed} on site (limit {limit})"
    line = f"{TITLES[kind]}: {plate} at {event.get('camera_id', '?')}"
    return f"{line} ({event['list']})" if event.get("list") else line


def _duration(seconds: object) -> str:
    """`2h05m`, `12m30s`, `45s`."""
    if not isinstance(seconds, int | float):
        return "?"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def chat_body(style: WebhookFormat, kind: EventKind, body: bytes) -> bytes:
    """The body a Slack or Teams incoming webhook shows: the headline, the event id."""
    event = orjson.loads(body)
    event_id = event.get("alert_id") or event.get("sighting_id") or event.get("event_id") or ""
    text = f"{headline(kind, event)} [event {event_id}]"
    if style is WebhookFormat.SLACK:
        return orjson.dumps({"text": text})
    return orjson.dumps({"@type": "MessageCard", "@context": "https://schema.org/extensions", "text": text})
