"""The NotifyTarget contract: what a target file may hold, secrets only as ${NAME}, every problem
named without echoing the value, and the records of the targets topic."""

from __future__ import annotations

import orjson
import pytest

from stream_worker.contracts.notify import (
    NotifyTarget,
    NotifyTargetError,
    TargetRecordError,
    decode_record,
    parse_target,
)

GOOD = {
    "type": "webhook",
    "url": "https://hooks.example.com/plates",
    "secret": "${GATE_SECRET}",
    "rules": {
        "lists": ["stolen"],
        "timezone": "Europe/Berlin",
        "active_hours": [{"start": "22:00", "end": "06:00"}],
    },
}


def test_a_good_target_round_trips_through_its_record() -> None:
    target = parse_target(GOOD)
    assert target.rules.active_hours[0].start.hour == 22
    assert decode_record(b"gate", target.to_json()) == ("gate", target)
    assert decode_record(b"gate", None) == ("gate", None)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"secret": "hunter 2/x"}, "secret"),
        ({"url": "https://user:hunter2@hooks.example.com/x"}, "password in clear"),
        ({"url": "https://hooks.example.com/x?token=abc"}, "token"),
        ({"url": "ftp://hooks.example.com/x"}, "http"),
        ({"url": None}, "needs a url"),
        ({"type": "email", "url": None, "secret": None, "host": "smtp.example.com"}, "sender"),
        ({"type": "mqtt", "url": None, "secret": None}, "needs a host"),
        ({"type": "mqtt"}, "url, secret: not settings of a mqtt target"),
        ({"host": "broker.example.com"}, "host: not settings of a webhook target"),
        ({"type": "sms"}, "type"),
        ({"rules": {"timezone": "Mars/Olympus"}}, "time zone"),
        ({"rules": {"active_hours": [{"start": "08:00", "end": "08:00"}]}}, "empty"),
        ({"rules": {"min_confidence": 2}}, "min_confidence"),
        ({"rules": {"cooldwn_s": 3}}, "cooldwn_s"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_bad_targets_are_refused_with_the_problem_named(change: dict, problem: str) -> None:
    with pytest.raises(NotifyTargetError) as refused:
        parse_target({**GOOD, **change})
    assert problem in str(refused.value)
    assert "hunter" not in str(refused.value)  # the value in clear is never echoed


MQTT = {"type": "mqtt", "host": "broker.example.com", "username": "notify", "password": "${MQTT_PASSWORD}"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"password": "hunter 2/x"}, "password"),
        ({"username": None}, "needs a username"),
        ({"topic_prefix": "plates/#"}, "topic_prefix"),
        ({"discovery_prefix": "home//assistant"}, "discovery_prefix"),
        ({"port": 0}, "port"),
    ],
)
def test_bad_mqtt_targets_are_refused(change: dict, problem: str) -> None:
    with pytest.raises(NotifyTargetError) as refused:
        parse_target({**MQTT, **change})
    assert problem in str(refused.value) and "hunter" not in str(refused.value)


MAIL = {
    "type": "email",
    "host": "smtp.example.com",
    "username": "notify",
    "password": "${SMTP_PASSWORD}",
    "sender": "plates@example.com",
    "recipients": ["guard@example.com"],
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"password": "hunter 2/x"}, "password"),
        ({"recipients": []}, "at least one recipient"),
        ({"recipients": ["guard@example.com\r\nBcc: x@y.z"]}, "plain e-mail address"),
        ({"sender": "Plates <plates@example.com>"}, "plain e-mail address"),
        ({"tls": False}, "STARTTLS"),
        ({"topic_prefix": "x"}, "topic_prefix: not settings of a email target"),
    ],
)
def test_bad_email_targets_are_refused(change: dict, problem: str) -> None:
    with pytest.raises(NotifyTargetError) as refused:
        parse_target({**MAIL, **change})
    assert problem in str(refused.value) and "hunter" not in str(refused.value)


def test_email_defaults_to_starttls_on_587() -> None:
    target = parse_target(MAIL)
    assert (target.uses_tls, target.broker_port) == (True, 587)


def test_mqtt_defaults() -> None:
    target = parse_target(MQTT)
    assert (target.broker_port, target.topics_prefix, target.discovery_prefix) == (
        1883,
        "stream-worker",
        "homeassistant",
    )
    assert parse_target({**MQTT, "tls": True}).broker_port == 8883


def test_secrets_are_references_only() -> None:
    assert parse_target({**GOOD, "secret": "${A}${B}"}).secret == "${A}${B}"
    assert parse_target({**GOOD, "url": "${SLACK_WEBHOOK_URL}"}).url == "${SLACK_WEBHOOK_URL}"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://hooks.slack.com/services/${SLACK_PATH}", "secret whole"),  # a reference in the path
        ("http://host/exfil/${DB_PASSWORD}?x=${SMTP_PASSWORD}", "secret whole"),
        ("https://${SMTP_PASSWORD}.attacker.invalid/", "secret whole"),  # in the host: DNS would leak it
        ("${A}${B}", "secret whole"),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", "holds a secret in clear"),
        ("https://discord.com/api/webhooks/1/abc", "holds a secret in clear"),
        ("https://org.webhook.office.com/webhookb2/abc@def/IncomingWebhook/x/y", "holds a secret in clear"),
        ("https://func.example.net/api/hook?code=abc", "holds a secret in clear"),
    ],
)
def test_a_url_holding_a_secret_is_only_a_whole_secret_url(url: str, problem: str) -> None:
    with pytest.raises(NotifyTargetError, match=problem):
        parse_target({**GOOD, "url": url})


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        (None, b"{}", "no key"),
        (b"Gate 1", b"{}", "lowercase"),
        (b"gate", b"not json", "not JSON"),
        (b"gate", orjson.dumps({"type": "webhook"}), "needs a url"),
    ],
)
def test_bad_records_are_refused(key: bytes | None, value: bytes, problem: str) -> None:
    with pytest.raises(TargetRecordError, match=problem):
        decode_record(key, value)


def test_the_schema_describes_the_secret_as_a_reference() -> None:
    schema = NotifyTarget.model_json_schema()
    assert "${NAME}" in schema["properties"]["secret"]["description"]
