"""Camera credentials: refused in clear, resolved from the environment, redacted from messages."""

from __future__ import annotations

import pytest

from stream_worker.contracts.cameras import CameraSettingsError, parse_settings
from stream_worker.contracts.credentials import (
    MissingCredential,
    is_file,
    redact,
    references,
    resolve,
    shown,
    url_problem,
)


@pytest.mark.parametrize(
    "url",
    [
        "rtsp://10.0.0.21:554/stream1",
        "rtsp://${GATE_USER}:${GATE_PASSWORD}@10.0.0.21:554/stream1",
        "rtsps://viewer@cam.example/live",  # a user name alone is no secret
        "http://cam.example/mjpg/video.mjpg",
        "https://cam.example/live/index.m3u8?token=${CAM_TOKEN}",
        "/videos/gate.mp4",
        "file:///videos/gate.mp4",
        "relative/clip.mov",
        "rtsp://${U}:${P1}${P2}@h/s",
    ],
)
def test_usable_sources(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("rtsp://admin:hunter2@10.0.0.21/s", "password in clear"),
        ("rtsp://admin:${P}x@10.0.0.21/s", "password in clear"),
        ("http://cam/video?password=hunter2", "'password' looks secret"),
        ("https://cam/live.m3u8?api_key=abc", "'api_key' looks secret"),
        ("ftp://cam/video", "scheme 'ftp'"),
        ("rtsp://${1X}:${P}@h", "malformed"),
        ("rtsp://${P@h", "malformed"),
        (" rtsp://h/s", "spaces"),
        ("rtsp://h/s\n", "spaces"),
    ],
)
def test_refused_sources(url: str, problem: str) -> None:
    found = url_problem(url)
    assert found is not None and problem in found


def test_references_in_order_each_once() -> None:
    assert references("rtsp://${U}:${P}@h/s?x=${P}&y=${T}") == ["U", "P", "T"]


def test_resolve_encodes_the_user_info_and_lists_every_secret() -> None:
    url, secrets = resolve("rtsp://${U}:${P}@10.0.0.1/s", {"U": "adm", "P": "p@ss:w/rd"})
    assert url == "rtsp://adm:p%40ss%3Aw%2Frd@10.0.0.1/s"
    assert "p@ss:w/rd" in secrets and "p%40ss%3Aw%2Frd" in secrets


def test_resolve_names_every_missing_variable() -> None:
    with pytest.raises(MissingCredential) as caught:
        resolve("rtsp://${U}:${P}@h/s", {"U": "adm"})
    assert caught.value.names == ["P"]
    assert "P" in str(caught.value)


def test_redact_removes_raw_and_encoded_secrets_longest_first() -> None:
    url, secrets = resolve("rtsp://${U}:${P}@h/s", {"U": "adm", "P": "adm-p@ss"})
    message = f"Server returned 401 Unauthorized for {url} (password adm-p@ss)"
    redacted = redact(message, secrets)
    assert "adm" not in redacted and "p@ss" not in redacted and "p%40ss" not in redacted
    assert "***" in redacted


def test_is_file() -> None:
    assert is_file("/videos/a.mp4") and is_file("file:///a.mp4") and is_file("a.mp4")
    assert not is_file("rtsp://h/s") and not is_file("http://h/s")


def test_a_refused_url_is_never_echoed_in_the_error() -> None:
    with pytest.raises(CameraSettingsError) as caught:
        parse_settings({"source": {"url": "rtsp://admin:hunter2@10.0.0.21/s"}})
    assert "hunter2" not in str(caught.value)
    assert "password in clear" in str(caught.value)


def test_source_motion_and_plate_format_are_left_out_when_absent() -> None:
    plain = parse_settings({"masks": []})
    assert b"source" not in plain.to_json() and b"motion" not in plain.to_json()
    assert plain.is_default
    full = parse_settings(
        {
            "source": {"url": "rtsp://${U}:${P}@h/s", "fps": 10, "rtsp_transport": "udp"},
            "motion": {"heartbeat_s": 5},
            "plate_format": "^[A-Z0-9]{4,9}$",
        }
    )
    assert not full.is_default
    assert parse_settings(__import__("orjson").loads(full.to_json())) == full
    assert full.motion is not None and full.motion.heartbeat_s == 5 and full.motion.enabled


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"source": {"url": "/a.mp4", "fps": 0}}, "source fps"),
        ({"source": {"url": "/a.mp4", "fps": 61}}, "source fps"),
        ({"source": {"url": "/a.mp4", "jpeg_quality": 0}}, "source jpeg_quality"),
        ({"source": {"url": "/a.mp4", "rtsp_transport": "http"}}, "source rtsp_transport"),
        ({"motion": {"pixel_threshold": 0}}, "motion pixel_threshold"),
        ({"motion": {"min_changed_share": 0}}, "motion min_changed_share"),
        ({"motion": {"heartbeat_s": 0}}, "motion heartbeat_s"),
        ({"plate_format": "([A-Z"}, "not a regular expression"),
    ],
)
def test_bad_source_and_motion_settings_are_named(data: dict, problem: str) -> None:
    with pytest.raises(CameraSettingsError) as caught:
        parse_settings(data)
    assert any(problem in line for line in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("rtsp://${U}:${P}@10.0.0.5:554/s1", "rtsp://***@10.0.0.5:554/s1"),
        ("rtsp://admin@cam/s", "rtsp://***@cam/s"),
        ("https://cam/live.m3u8?token=${T}&q=1", "https://cam/live.m3u8?token=***&q=1"),
        ("http://cam:8080/video", "http://cam:8080/video"),
        ("/videos/gate.mp4", "/videos/gate.mp4"),
    ],
)
def test_a_listing_shows_no_account_or_secret(url: str, expected: str) -> None:
    assert shown(url) == expected
