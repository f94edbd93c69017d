"""The console address of an event's plate picture (notify/pictures.py), which must be the route
the history store serves, and the --console-url setting."""

from __future__ import annotations

import orjson
import pytest
from store_records import FAKE_JPEG, plate_alert, plate_sighting, sighting_id

from stream_worker.notify.pictures import alert_picture_url, sighting_picture_url, with_picture_url
from stream_worker.notify.settings import load_settings
from stream_worker.service.settings import ConfigError
from stream_worker.store.web.paths import sighting_picture

CONSOLE = "https://plates.example.com/console/"


def test_a_sighting_with_a_picture_links_the_stores_picture_route() -> None:
    sighting = plate_sighting("s", "X999YX99", picture=FAKE_JPEG)
    url = sighting_picture_url(CONSOLE, sighting)
    assert url == "https://plates.example.com/console" + sighting_picture(sighting.sighting_id)
    assert sighting_picture_url(CONSOLE, plate_sighting("s", "X999YX99")) is None  # no picture
    assert sighting_picture_url(None, sighting) is None  # no --console-url


def test_a_sighting_alert_links_its_sightings_picture_a_read_alert_none() -> None:
    from_sighting = plate_alert("a", "B840CK197", sighting="s")
    assert alert_picture_url("http://console:8080", from_sighting) == (
        f"http://console:8080/api/sightings/{sighting_id('s')}/picture"
    )
    assert alert_picture_url("http://console:8080", plate_alert("r", "B840CK197")) is None
    assert alert_picture_url(None, from_sighting) is None


def test_the_url_is_added_to_the_events_own_json() -> None:
    alert = plate_alert("a", "B840CK197", sighting="s")
    body = with_picture_url(alert.to_json(), "http://console/x")
    assert orjson.loads(body) == {**orjson.loads(alert.to_json()), "picture_url": "http://console/x"}
    assert with_picture_url(alert.to_json(), None) == alert.to_json()


@pytest.mark.parametrize("url", ["plates.example.com", "ftp://plates.example.com", "https://a b", "https://"])
def test_a_console_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match=r"--console-url .*must be an http:// or https:// address"):
        load_settings(["--console-url", url])
    assert load_settings(["--console-url", CONSOLE]).console_url == CONSOLE
