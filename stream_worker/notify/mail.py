"""E-mail delivery: one message per event over SMTP, STARTTLS required by default, then AUTH.

The message says what happened in its subject and first lines, attaches the event's JSON, and the
plate picture when the event carries one (a sighting's best read; an alert carries none). The
SMTP server's address is checked by the SSRF guard (addresses.py) and the connection goes to that
checked address, while STARTTLS verifies the certificate against the host name. The password is
resolved from the target secrets (secrets.py) here only, and every error is redacted. Accepted by the server
(250 to the end of DATA) is acknowledged; a 4xx or a lost connection is retried, a 5xx is final.

The connection (connect, EHLO, STARTTLS, AUTH) is kept for the target's next message, as
providers expect of a client, and replaced when the target changes or it was idle too long. When
the server closed it meanwhile (gone, a 421, a broken pipe) before the message reached DATA, the
message goes once more on a new connection within the same attempt: nothing was accepted, so
nothing is sent twice. A loss once DATA began is the lane's retry, as on a new connection.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import smtplib
import ssl
import time
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import orjson

from stream_worker.contracts.credentials import redact
from stream_worker.contracts.notify import NotifyTarget
from stream_worker.notify.addresses import TargetRefused
from stream_worker.notify.addresses import resolve as resolve_address
from stream_worker.notify.messages import headline
from stream_worker.notify.rules import EventKind
from stream_worker.notify.secrets import MissingSecret, Secrets, resolve
from stream_worker.notify.webhook import MAX_ERROR_CHARS, Attempt

# A kept connection idle longer than this is replaced before use, not tried: servers drop idle
# clients (RFC 5321 asks them to wait 5 minutes; many wait less), and a half-open one would cost
# the target's whole timeout before the resend.
IDLE_LIMIT_S = 30.0


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
    for label, key in (("Seen", "captured_at"), ("First seen", "first_seen"), ("Entered", "entered_at")):
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


class _Connection(smtplib.SMTP):
    """An SMTP connection that knows whether the message in progress reached DATA: until then the
    server cannot have accepted it, so it may be said again on a new connection."""

    data_begun = False

    def data(self, msg: bytes | str) -> tuple[int, bytes]:
        self.data_begun = True
        return super().data(msg)


def _lost(error: OSError) -> bool:
    """The server closed the connection (gone, a 421, a broken pipe), as against answering no."""
    if isinstance(error, smtplib.SMTPServerDisconnected):
        return True
    if isinstance(error, smtplib.SMTPResponseException):
        return error.smtp_code == 421
    if isinstance(error, smtplib.SMTPRecipientsRefused):
        return any(code == 421 for code, _reply in error.recipients.values())
    return not isinstance(error, smtplib.SMTPException)  # a socket error: reset, broken pipe, timeout


class MailSender:
    """One lane's e-mail sender: the connection is kept for the next message and used from the
    lane's thread only (send and close)."""

    def __init__(
        self,
        allow_private: bool,
        ca_file: Path | None = None,
        secrets: Mapping[str, str] | None = None,
        idle_limit_s: float = IDLE_LIMIT_S,
    ) -> None:
        self._allow_private = allow_private
        self._ca_file = ca_file
        self._secret_values = Secrets() if secrets is None else secrets
        self._idle_limit_s = idle_limit_s
        self._connection: _Connection | None = None
        self._connected_for: NotifyTarget | None = None
        self._used_at = 0.0  # monotonic: the connection's last message (or its opening)
        self._secrets: list[str] = []

    def send(
        self, target: NotifyTarget, event_id: str, body: bytes, kind: EventKind = EventKind.ALERT
    ) -> Attempt:
        try:
            self._deliver(target, compose(target, event_id, body, kind))
        except MissingSecret as error:
            return Attempt(False, retry=True, error=str(error), hold=True)
        except TargetRefused as error:
            return Attempt(False, retry=False, error=str(error)[:MAX_ERROR_CHARS])
        except smtplib.SMTPResponseException as error:
            text = f"answered {error.smtp_code} {error.smtp_error.decode(errors='replace')}"
            return Attempt(False, retry=error.smtp_code < 500, error=self._redact(text))
        except smtplib.SMTPRecipientsRefused as error:
            retry = any(code < 500 for code, _reply in error.recipients.values())
            return Attempt(False, retry=retry, error=self._redact(f"recipients refused: {error}"))
        except (smtplib.SMTPException, OSError) as error:
            return Attempt(False, retry=True, error=self._redact(f"{type(error).__name__}: {error}"))
        return Attempt(True, retry=False)

    def close(self) -> None:
        """QUIT and close the kept connection; one idle past the limit is only closed (the server
        has likely dropped it, and a QUIT would wait for the timeout)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if time.monotonic() - self._used_at <= self._idle_limit_s:
            with contextlib.suppress(smtplib.SMTPException, OSError):
                connection.quit()
        connection.close()

    def _deliver(self, target: NotifyTarget, message: EmailMessage) -> None:
        """On the kept connection when there is one; if the server closed it before the message
        reached DATA, once more on a new connection (the same attempt: nothing was accepted)."""
        try:
            connection = self._kept(target)
            if connection is not None:
                connection.data_begun = False
                try:
                    connection.send_message(message)
                    self._used_at = time.monotonic()
                    return
                except OSError as error:  # smtplib's errors are OSErrors too
                    if connection.data_begun or not _lost(error):
                        raise
                    self._drop()
            self._open(target).send_message(message)
            self._used_at = time.monotonic()
        except Exception:
            self._drop()  # after any failure its state is unknown: the next attempt starts afresh
            raise

    def _kept(self, target: NotifyTarget) -> _Connection | None:
        """The kept connection if it is for this target as it is now and not idle too long."""
        if self._connection is None:
            return None
        if self._connected_for != target or time.monotonic() - self._used_at > self._idle_limit_s:
            self.close()  # a changed target re-resolves its address and logs in afresh
            return None
        return self._connection

    def _open(self, target: NotifyTarget) -> _Connection:
        self._secrets = []
        password = None
        if target.password is not None:
            password, self._secrets = resolve(target.password, self._secret_values)
        host, port = target.host or "", target.broker_port
        address = resolve_address(host, port, self._allow_private)
        connection = _Connection(timeout=target.timeout_s)
        try:
            connection.connect(str(address), port)
            connection._host = host  # type: ignore[attr-defined]  # STARTTLS verifies the name, not the address
            connection.ehlo()
            if target.uses_tls:
                context = ssl.create_default_context(cafile=str(self._ca_file) if self._ca_file else None)
                connection.starttls(context=context)
                connection.ehlo()
            if target.username is not None:
                connection.login(target.username, password or "")
        except BaseException:
            connection.close()
            raise
        self._connection, self._connected_for, self._used_at = connection, target, time.monotonic()
        return connection

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets)[:MAX_ERROR_CHARS]
