"""E-mail delivery (notify/mail.py) against a real SMTP server (aiosmtpd) that requires STARTTLS and
AUTH: the message, its JSON and picture attachments, the password from the environment (never in
an error), what is retried, TLS verified against the host name, the SSRF guard."""

from __future__ import annotations

import pytest
from store_records import FAKE_JPEG, plate_sighting

from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.broker import free_port
from stream_worker.notify.mail import MailSender
from stream_worker.notify.rules import EventKind
from tests.notify.receivers import SECRET

ENV = {"SMTP_PASSWORD": SECRET}


def target(port: int, **extra: object):
    return parse_target(
        {
            "type": "email",
            "host": "localhost",
            "port": port,
            "username": "notify",
            "password": "${SMTP_PASSWORD}",
            "sender": "plates@example.com",
            "recipients": ["guard@example.com", "office@example.com"],
            "timeout_s": 5,
            **extra,
        }
    )


def test_an_unknown_vehicle_by_mail_with_its_picture(smtp) -> None:
    port, inbox, ca = smtp
    sighting = plate_sighting("visitor", "X999YX99", picture=FAKE_JPEG)
    sender = MailSender(allow_private=True, ca_file=ca, environ=ENV)
    attempt = sender.send(target(port), sighting.sighting_id, sighting.to_json(), EventKind.UNKNOWN_VEHICLE)
    assert attempt.ok, attempt.error
    [(mail_from, recipients, message)] = inbox.messages
    assert (mail_from, recipients) == ("plates@example.com", ["guard@example.com", "office@example.com"])
    assert message["Subject"] == "Unknown vehicle: X999YX99 at gate"
    assert message["X-Stream-Worker-Event"] == sighting.sighting_id
    parts = {
        part.get_filename(): part.get_payload(decode=True) for part in message.walk() if part.get_filename()
    }
    assert parts["plate.jpg"] == FAKE_JPEG
    assert parts["unknown_vehicle.json"] == sighting.to_json()


def test_a_wrong_password_is_final_and_never_echoed(smtp) -> None:
    port, inbox, ca = smtp
    sender = MailSender(allow_private=True, ca_file=ca, environ={"SMTP_PASSWORD": "wrong " + SECRET})
    attempt = sender.send(
        target(port), "e-1", plate_sighting("v", "X999YX99").to_json(), EventKind.UNKNOWN_VEHICLE
    )
    assert (attempt.ok, attempt.retry) == (False, False), attempt.error
    assert "535" in (attempt.error or "") and "s3cret" not in (attempt.error or "")
    assert inbox.messages == []


def test_untrusted_certificate_and_a_closed_port_are_retried(smtp) -> None:
    port, inbox, _ca = smtp
    body = plate_sighting("v", "X999YX99").to_json()
    untrusted = MailSender(allow_private=True, environ=ENV).send(
        target(port), "e-1", body, EventKind.UNKNOWN_VEHICLE
    )
    assert (untrusted.ok, untrusted.retry) == (False, True)
    assert "CERTIFICATE_VERIFY_FAILED" in (untrusted.error or "")
    closed = MailSender(allow_private=True, environ=ENV).send(
        target(free_port()), "e-1", body, EventKind.UNKNOWN_VEHICLE
    )
    assert (closed.ok, closed.retry) == (False, True)
    assert inbox.messages == []


def test_a_private_server_is_refused_without_the_flag(smtp) -> None:
    port, _inbox, ca = smtp
    body = plate_sighting("v", "X999YX99").to_json()
    attempt = MailSender(allow_private=False, ca_file=ca, environ=ENV).send(
        target(port), "e-1", body, EventKind.ALERT
    )
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "--allow-private-targets" in (attempt.error or "")


def test_a_password_is_never_sent_in_clear() -> None:
    with pytest.raises(ValueError, match="STARTTLS"):
        target(25, tls=False)
