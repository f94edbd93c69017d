"""E-mail delivery: one message per event over SMTP, STARTTLS required by default, then AUTH.

The message says what happened in its subject and first lines, attaches the event's JSON, and the
plate picture when the event carries one (a sighting's best read; an alert carries none). The
SMTP server's address is checked by the SSRF guard (addresses.py) and the connection goes to that
checked address, while STARTTLS verifies the certificate against the host name. The password is
resolved from the environment here only, and every error is redacted. Accepted by the server
(250 to the end of DATA) is acknowledged; a 4xx or a lost connection is retried, a 5xx is final.
"""

from __future__ import annotations

import base64
import binascii
import os
import smtplib
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import orjson

from stream_worker.contracts.credentials import MissingCredential, redact, resolve
from stream_worker.contracts.notify import NotifyTarget
from stream_worker.notify.addresses import TargetRefused
from stream_worker.notify.addresses import resolve as resolve_address
from stream_worker.notify.messages import headline
from stream_worker.notify.rules import EventKind
from stream_worker.notify.webhook import MAX_ERROR_CHARS, Attempt


def compose(target: NotifyTarget, event_id: str, body: bytes, kind: EventKind) -> EmailMessage:
    """The message for one event: a subject and lines a person reads, the JSON, the picture."""
    event: dict[str, Any] = orjson.loads(body)
    message = EmailMessage()
    message["From"] = target.sender or ""
    message["To"] = ", ".join(target.recipients)
    message["Subject"] = headline(kind, event)
    message["Message-ID"] = make_msgid(idstring=event_id.replace("-", ""), domain="stream-worker")
    message["X-Stream-Worker-Event"] = event_id
    message["X-Stream-Worker-Kind"] = kind.value
    lines = [f"{headline(kind, event)}."]
    for label, key in (("Seen", "captured_at"), ("First seen", "first_seen")):
        if event.get(key):
            lines.append(f"{label}: {event[key]}")
    lines.append(f"Event id: {event_id} (the attached JSON is the whole event)")
    message.set_content("\n".join(lines) + "\n")
    message.add_attachment(body, maintype="application", subtype="json", filename=f"{kind.value}.json")
    picture = (event.get("best_read") or {}).get("image")
    if picture:
        try:
            jpeg = base64.b64decode(picture, validate=True)
        except (binascii.Error, ValueError):
            jpeg = b""
        if jpeg:
            message.add_attachment(jpeg, maintype="image", subtype="jpeg", filename="plate.jpg")
    return message


class MailSender:
    def __init__(
        self, allow_private: bool, ca_file: Path | None = None, environ: Mapping[str, str] = os.environ
    ) -> None:
        self._allow_private = allow_private
        self._ca_file = ca_file
        self._environ = environ

    def send(
        self, target: NotifyTarget, event_id: str, body: bytes, kind: EventKind = EventKind.ALERT
    ) -> Attempt:
        secrets: list[str] = []
        try:
            password = None
            if target.password is not None:
                password, secrets = resolve(target.password, self._environ)
            message = compose(target, event_id, body, kind)
            host, port = target.host or "", target.broker_port
            address = resolve_address(host, port, self._allow_private)
            with smtplib.SMTP(timeout=target.timeout_s) as smtp:
                smtp.connect(str(address), port)
                smtp._host = host  # type: ignore[attr-defined]  # STARTTLS verifies the name, not the address
                smtp.ehlo()
                if target.uses_tls:
                    context = ssl.create_default_context(cafile=str(self._ca_file) if self._ca_file else None)
                    smtp.starttls(context=context)
                    smtp.ehlo()
                if target.username is not None:
                    smtp.login(target.username, password or "")
                smtp.send_message(message)
        except MissingCredential as error:
            return Attempt(False, retry=False, error=str(error))
        except TargetRefused as error:
            return Attempt(False, retry=False, error=str(error)[:MAX_ERROR_CHARS])
        except smtplib.SMTPResponseException as error:
            text = f"answered {error.smtp_code} {error.smtp_error.decode(errors='replace')}"
            return Attempt(False, retry=error.smtp_code < 500, error=redact(text, secrets)[:MAX_ERROR_CHARS])
        except smtplib.SMTPRecipientsRefused as error:
            return Attempt(
                False, retry=False, error=redact(f"recipients refused: {error}", secrets)[:MAX_ERROR_CHARS]
            )
        except (smtplib.SMTPException, OSError) as error:
            text = f"{type(error).__name__}: {error}"
            return Attempt(False, retry=True, error=redact(text, secrets)[:MAX_ERROR_CHARS])
        return Attempt(True, retry=False)

    def close(self) -> None:
        pass  # one connection per message: nothing kept open
