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
}


def headline(kind: EventKind, event: dict[str, Any]) -> str:
    """`Watch-list alert: B840CK197 at gate-1 (stolen)`, `Unknown vehicle: X999YX99 at gate`."""
    plate = event.get("plate") or event.get("text") or "?"
    line = f"{TITLES[kind]}: {plate} at {event.get('camera_id', '?')}"
    return f"{line} ({event['list']})" if event.get("list") else line


def chat_body(style: WebhookFormat, kind: EventKind, body: bytes) -> bytes:
    """The body a Slack or Teams incoming webhook shows: the headline, the event id."""
    event = orjson.loads(body)
    event_id = event.get("alert_id") or event.get("sighting_id") or ""
    text = f"{headline(kind, event)} [event {event_id}]"
    if style is WebhookFormat.SLACK:
        return orjson.dumps({"text": text})
    return orjson.dumps({"@type": "MessageCard", "@context": "https://schema.org/extensions", "text": text})
