"""The console address of an event's plate picture, added to the event's JSON as `picture_url`, so
that whoever receives a webhook (an MQTT message, an e-mail) can show the plate without reaching
into Kafka.

The history store keeps one picture per sighting, its best read's, and serves it at
`/api/sightings/{sighting_id}/picture` (the store's web/paths.py; a test holds the two together).
A sighting event links it when its best read has a picture; a sighting alert (`origin: sighting`)
links its sighting's, which the store has when that camera keeps plate pictures (else it answers
404); a read alert comes before its pass's sighting exists, so it has none.
"""

from __future__ import annotations

from urllib.parse import quote

import orjson

from stream_worker.contracts import PlateAlert, PlateSighting

PICTURE_URL_KEY = "picture_url"


def sighting_picture_url(console_url: str | None, sighting: PlateSighting) -> str | None:
    if console_url is None or sighting.best_read.image is None:
        return None
    return _url(console_url, sighting.sighting_id)


def alert_picture_url(console_url: str | None, alert: PlateAlert) -> str | None:
    if console_url is None or alert.sighting_id is None:
        return None
    return _url(console_url, alert.sighting_id)


def _url(console_url: str, sighting_id: str) -> str:
    return f"{console_url.rstrip('/')}/api/sightings/{quote(sighting_id, safe='')}/picture"


def with_picture_url(body: bytes, url: str | None) -> bytes:
    """The event's JSON with `picture_url` added (unchanged without a URL)."""
    if url is None:
        return body
    return orjson.dumps({**orjson.loads(body), PICTURE_URL_KEY: url})
