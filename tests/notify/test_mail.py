"""E-mail delivery (notify/mail.py) against a real SMTP server (aiosmtpd) that requires STARTTLS and
AUTH: the message, its JSON and picture attachments, the password from the environment (never in
an error), what is retried, TLS verified against the host name, the SSRF guard."""

from __future__ import annotations

import pytest
from store_records import FAKE_JPEG, plate_sighting

from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.ports import free_port
from stream_worker.notify.mail import MailSender
from stream_worker.notify.rules import EventKind
from tests.notify.receivers import SECRET, drop_connections

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
    port, inbox, ca, _controller = smtp
    sighting = plate_sighting("visitor", "X999YX99", picture=FAKE_JPEG)
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV)
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
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets={"SMTP_PASSWORD": "wrong " + SECRET})
    attempt = sender.send(
        target(port), "e-1", plate_sighting("v", "X999YX99").to_json(), EventKind.UNKNOWN_VEHICLE
    )
    assert (attempt.ok, attempt.retry) == (False, False), attempt.error
    assert "535" in (attempt.error or "") and "s3cret" not in (attempt.error or "")
    assert inbox.messages == []


def test_untrusted_certificate_and_a_closed_port_are_retried(smtp) -> None:
    port, inbox, _ca, _controller = smtp
    body = plate_sighting("v", "X999YX99").to_json()
    untrusted = MailSender(allow_private=True, secrets=ENV).send(
        target(port), "e-1", body, EventKind.UNKNOWN_VEHICLE
    )
    assert (untrusted.ok, untrusted.retry) == (False, True)
    assert "CERTIFICATE_VERIFY_FAILED" in (untrusted.error or "")
    closed = MailSender(allow_private=True, secrets=ENV).send(
        target(free_port()), "e-1", body, EventKind.UNKNOWN_VEHICLE
    )
    assert (closed.ok, closed.retry) == (False, True)
    assert inbox.messages == []


def test_a_private_server_is_refused_without_the_flag(smtp) -> None:
    port, _inbox, ca, _controller = smtp
    body = plate_sighting("v", "X999YX99").to_json()
    attempt = MailSender(allow_private=False, ca_file=ca, secrets=ENV).send(
        target(port), "e-1", body, EventKind.ALERT
    )
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "--allow-private-targets" in (attempt.error or "")


def test_a_password_is_never_sent_in_clear() -> None:
    with pytest.raises(ValueError, match="STARTTLS"):
        target(25, tls=False)


def alert_body(n: int) -> bytes:
    return plate_sighting(f"v{n}", "X999YX99").to_json()


def test_messages_share_one_connection_until_the_sender_closes(smtp) -> None:
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV)
    for n in range(3):
        attempt = sender.send(target(port), f"e-{n}", alert_body(n), EventKind.ALERT)
        assert attempt.ok, attempt.error
    assert inbox.connections() == [0, 0, 0]
    assert all(session.tls and session.authenticated for session in inbox.sessions)
    assert inbox.quits == []
    sender.close()
    assert inbox.quits == [inbox.sessions[0].peer]  # answered 221 before close() returned


def test_a_connection_the_server_dropped_is_replaced_within_the_attempt(smtp) -> None:
    port, inbox, ca, controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV)
    assert sender.send(target(port), "e-0", alert_body(0), EventKind.ALERT).ok
    drop_connections(controller, inbox)
    for n in (1, 2):
        attempt = sender.send(target(port), f"e-{n}", alert_body(n), EventKind.ALERT)
        assert attempt.ok, attempt.error  # no failed attempt: the lane counts no retry
    assert inbox.connections() == [0, 1, 1]  # the new connection is kept in turn
    assert [message["X-Stream-Worker-Event"] for _f, _r, message in inbox.messages] == ["e-0", "e-1", "e-2"]
    assert all(session.tls and session.authenticated for session in inbox.sessions)
    sender.close()


def test_a_421_mid_session_reconnects_and_the_message_goes_once(smtp) -> None:
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV)
    assert sender.send(target(port), "e-0", alert_body(0), EventKind.ALERT).ok
    inbox.refuse_mail = 1
    attempt = sender.send(target(port), "e-1", alert_body(1), EventKind.ALERT)
    assert attempt.ok, attempt.error
    assert inbox.connections() == [0, 1]
    assert [message["X-Stream-Worker-Event"] for _f, _r, message in inbox.messages] == ["e-0", "e-1"]
    assert all(session.tls and session.authenticated for session in inbox.sessions)
    sender.close()


def test_a_connection_lost_after_data_is_not_resent_in_the_attempt(smtp) -> None:
    """The server may have accepted the message: the lane's retry decides, not a silent resend."""
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets={"SMTP_PASSWORD": SECRET})
    assert sender.send(target(port), "e-0", alert_body(0), EventKind.ALERT).ok
    inbox.drop_after_data = True
    attempt = sender.send(target(port), "e-1", alert_body(1), EventKind.ALERT)
    assert (attempt.ok, attempt.retry) == (False, True)
    assert "s3cret" not in (attempt.error or "")
    assert [message["X-Stream-Worker-Event"] for _f, _r, message in inbox.messages] == ["e-0", "e-1"]
    inbox.drop_after_data = False
    assert sender.send(target(port), "e-1", alert_body(1), EventKind.ALERT).ok  # the lane's retry
    assert inbox.connections() == [0, 0, 1]
    sender.close()


def test_a_changed_target_gets_a_new_connection_and_the_old_one_quits(smtp) -> None:
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV)
    assert sender.send(target(port), "e-0", alert_body(0), EventKind.ALERT).ok
    changed = target(port, sender="gate@example.com")
    for n in (1, 2):
        assert sender.send(changed, f"e-{n}", alert_body(n), EventKind.ALERT).ok
    assert inbox.connections() == [0, 1, 1]
    assert [mail_from for mail_from, _r, _m in inbox.messages] == [
        "plates@example.com",
        "gate@example.com",
        "gate@example.com",
    ]
    assert inbox.quits == [inbox.sessions[0].peer]
    sender.close()


def test_a_connection_idle_past_the_limit_is_replaced_before_use(smtp) -> None:
    port, inbox, ca, _controller = smtp
    sender = MailSender(allow_private=True, ca_file=ca, secrets=ENV, idle_limit_s=0.0)
    for n in (0, 1):
        assert sender.send(target(port), f"e-{n}", alert_body(n), EventKind.ALERT).ok
    assert inbox.connections() == [0, 1]
    sender.close()
