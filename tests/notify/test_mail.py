"""E-mail delivery (notify/mail.py) against a real SMTP server (aiosmtpd) that requires STARTTLS and
AUTH: the message, its JSON and picture attachments, the password from the environment (never in
an error), what is retried, TLS verified against the host name, the SSRF guard."""

from __future__ import annotations

import email
import ssl
from email.message import Message
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from certificates import make_authority
from store_records import FAKE_JPEG, plate_sighting

from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.broker import free_port
from stream_worker.notify.mail import MailSender
from stream_worker.notify.rules import EventKind

SECRET = "s3cret with space/and slash"
ENV = {"SMTP_PASSWORD": SECRET}


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []

    async def handle_DATA(self, _server, _session, envelope) -> str:
        self.messages.append(
            (envelope.mail_from, envelope.rcpt_tos, email.message_from_bytes(envelope.content))
        )
        return "250 OK"


def authenticate(_server, _session, _envelope, _mechanism, auth_data) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"notify",
        SECRET.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself


@pytest.fixture
def smtp(tmp_path: Path):
    authority = make_authority(tmp_path / "tls")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(authority.server.cert, authority.server.key)
    inbox = Inbox()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=free_port(),
        server_hostname="localhost",
        tls_context=context,
        require_starttls=True,
        authenticator=authenticate,
        auth_require_tls=True,
    )
    controller.start()
    yield controller.port, inbox, authority.ca
    controller.stop()


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
