"""Every pattern check takes the whole value: a line feed or carriage return at the end, which
`re.match` with `$` let through, is refused in each field (a target's name on its record key, an
e-mail address that would end the header block, an MQTT topic prefix, a secret reference, a watch
list's plate, a formats book's code, a frame's capture time)."""

from __future__ import annotations

import tomllib

import pytest

from stream_worker.contracts.credentials import is_reference_only, url_problem
from stream_worker.contracts.notify import (
    NotifyTargetError,
    TargetRecordError,
    decode_record,
    parse_target,
    target_name_problem,
)
from stream_worker.contracts.plate_formats import BOOK_PATH, FormatsError, parse_book
from stream_worker.contracts.watchlist import plate_problem
from stream_worker.worker.validate import parse_captured_at

ENDS = ["\n", "\r", "\r\n"]
WEBHOOK = {"type": "webhook", "url": "https://hooks.example.com/gate", "secret": "${GATE_SECRET}"}
MQTT = {
    "type": "mqtt",
    "host": "broker.example.com",
    "username": "notify",
    "password": "${MQTT_PASSWORD}",
    "topic_prefix": "stream-worker",
    "discovery_prefix": "homeassistant",
}
EMAIL = {
    "type": "email",
    "host": "smtp.example.com",
    "username": "notify",
    "password": "${SMTP_PASSWORD}",
    "sender": "a@b.example",
    "recipients": ["c@d.example"],
}


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize(
    ("target", "field"),
    [
        (WEBHOOK, "secret"),
        (MQTT, "password"),
        (MQTT, "topic_prefix"),
        (MQTT, "discovery_prefix"),
        (EMAIL, "password"),
        (EMAIL, "sender"),
    ],
)
def test_a_target_setting_ending_in_a_line_end_is_refused(target: dict, field: str, end: str) -> None:
    parse_target(target)  # good without it
    with pytest.raises(NotifyTargetError, match=field):
        parse_target({**target, field: target[field] + end})


@pytest.mark.parametrize("end", ENDS)
def test_a_recipient_ending_in_a_line_end_is_refused(end: str) -> None:
    with pytest.raises(NotifyTargetError, match="recipients"):
        parse_target({**EMAIL, "recipients": ["c@d.example", "e@f.example" + end]})


@pytest.mark.parametrize("end", ENDS)
def test_a_target_name_ending_in_a_line_end_is_refused(end: str) -> None:
    assert target_name_problem("w-good") is None
    assert target_name_problem("w-good" + end) is not None
    value = parse_target(WEBHOOK).to_json()
    assert decode_record(b"w-good", value)[0] == "w-good"
    with pytest.raises(TargetRecordError, match="target name"):
        decode_record(("w-good" + end).encode(), value)


@pytest.mark.parametrize("end", ENDS)
def test_a_secret_reference_ending_in_a_line_end_is_not_a_reference(end: str) -> None:
    assert is_reference_only("${GATE_SECRET}")
    assert not is_reference_only("${GATE_SECRET}" + end)
    assert url_problem("https://hooks.example.com/x?token=${TOKEN}") is None
    assert url_problem(
        "https://hooks.example.com/x?token=${TOKEN}" + end.replace("\n", "%0A").replace("\r", "%0D")
    )


@pytest.mark.parametrize("end", ENDS)
def test_a_plate_ending_in_a_line_end_is_refused(end: str) -> None:
    assert plate_problem("B840CK197") is None
    assert plate_problem("B840CK197" + end) is not None


@pytest.mark.parametrize("end", ENDS)
def test_a_formats_book_code_ending_in_a_line_end_is_refused(end: str) -> None:
    data = tomllib.loads(BOOK_PATH.read_text(encoding="utf-8"))
    code, row = next(iter(data["countries"].items()))
    parse_book({"countries": {code: row}})  # good as it is
    with pytest.raises(FormatsError, match="a code is"):
        parse_book({"countries": {code + end: row}})


def test_epoch_milliseconds_ending_in_a_line_feed_are_refused() -> None:
    assert parse_captured_at("1700000000000").year == 2023
    with pytest.raises(ValueError, match="neither ISO-8601 nor epoch milliseconds"):
        parse_captured_at("1700000000000\n")
