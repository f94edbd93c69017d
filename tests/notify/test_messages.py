"""What an event says to a person (notify/messages.py): the overstay's headline and chat message."""

from __future__ import annotations

import orjson
import pytest

from stream_worker.contracts.notify import WebhookFormat
from stream_worker.notify.messages import chat_body, headline
from stream_worker.notify.rules import EventKind

OVERSTAY = {"event_id": "e-1", "plate": "B840CK197", "site": "depot", "dwell_s": 7500.5, "overstay_s": 7200}


@pytest.mark.parametrize(
    ("dwell_s", "overstay_s", "said"),
    [
        (7500.5, 7200, "2h05m on site (limit 2h00m)"),
        (750, 600, "12m30s on site (limit 10m00s)"),
        (45, 30, "45s on site (limit 30s)"),
    ],
)
def test_an_overstays_headline_names_the_plate_site_stay_and_limit(dwell_s, overstay_s, said) -> None:
    event = {**OVERSTAY, "dwell_s": dwell_s, "overstay_s": overstay_s}
    assert headline(EventKind.OVERSTAY, event) == f"Overstay: B840CK197 at depot, {said}"


def test_an_overstays_chat_message_carries_its_event_id() -> None:
    message = orjson.loads(chat_body(WebhookFormat.SLACK, EventKind.OVERSTAY, orjson.dumps(OVERSTAY)))
    assert message == {"text": "Overstay: B840CK197 at depot, 2h05m on site (limit 2h00m) [event e-1]"}
