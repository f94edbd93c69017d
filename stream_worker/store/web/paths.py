"""Ids put into URL paths: one encoder for the templates (the `segment` filter), the live feed and
the redirects, so that an id holding `/`, `?`, `#` or `..` stays one path segment of the page it
names and can never turn a link or a form into another route."""

from __future__ import annotations

from urllib.parse import quote

# A browser resolves these segments (also when percent-encoded) before sending the request.
_DOT_SEGMENTS = (".", "..")


def segment(value: object) -> str:
    """`value` as one percent-encoded path segment. A bare `.` or `..` (which no encoding keeps
    from being resolved) gets an encoded `/` before it: the server decodes it into a path no route
    matches (a clean 404, not even a trailing-slash redirect), instead of the browser walking up
    a level."""
    encoded = quote(str(value), safe="")
    return "%2F" + encoded if encoded in _DOT_SEGMENTS else encoded


def sighting_page(sighting_id: object) -> str:
    return f"/sightings/{segment(sighting_id)}"


def sighting_picture(sighting_id: object) -> str:
    return f"/api/sightings/{segment(sighting_id)}/picture"


def camera_page(camera_id: object) -> str:
    return f"/cameras/{segment(camera_id)}"
