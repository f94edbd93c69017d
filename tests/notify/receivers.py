"""The notify tests' receivers (importable as tests.notify.receivers): a webhook receiver that checks
each signature and answers as told, and an SMTP inbox with its authenticator for aiosmtpd (the
`smtp` fixture of tests/notify/conftest.py serves it with STARTTLS and AUTH)."""

from __future__ import annotations

import email
import hashlib
import hmac
import http.server
import threading
import time
from dataclasses import dataclass, field
from email.message import Message

import orjson
from aiosmtpd.smtp import AuthResult, LoginPassword
from support import reply

from stream_worker.notify.webhook import EVENT_HEADER, KIND_HEADER, SIGNATURE_HEADER

SECRET = "s3cret with space/and slash"  # every target's secret and password in these tests


@dataclass
class Hook:
    """A webhook receiver: what it got (event ids, whether each signature checked), and how it
    answers: `fail` says 500, `hang` keeps the request past the target's timeout, until `healed`;
    the first `fail_first` requests get a 500 whatever the mode."""

    mode: str = "ok"  # ok | fail | hang
    delay_s: float = 0.0
    fail_first: int = 0
    healed: threading.Event = field(default_factory=threading.Event)
    received: list[str] = field(default_factory=list)  # event ids, in order, every attempt
    kinds: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    bodies: dict[str, dict] = field(default_factory=dict)  # event id -> the JSON body last received
    bad_signatures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self):
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                event_id = self.headers[EVENT_HEADER]
                with hook.lock:
                    hook.received.append(event_id)
                    hook.kinds.append(self.headers[KIND_HEADER])
                    hook.bodies[event_id] = orjson.loads(body)
                    hook.bad_signatures += self.headers[SIGNATURE_HEADER] != expected
                    refused = len(hook.received) <= hook.fail_first
                if hook.delay_s:
                    time.sleep(hook.delay_s)
                if refused or (not hook.healed.is_set() and hook.mode == "fail"):
                    reply(self, 500, "text/plain", b"down")
                    return
                if not hook.healed.is_set() and hook.mode == "hang":
                    hook.healed.wait(3)
                    return
                reply(self, 200, "text/plain", b"ok")
                with hook.lock:
                    hook.acknowledged.append(event_id)

            def log_message(self, *_args: object) -> None:
                pass

        return Handler


class Inbox:
    """aiosmtpd's handler: every message accepted, as (MAIL FROM, RCPT TOs, the parsed message)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []

    async def handle_DATA(self, _server, _session, envelope) -> str:
        self.messages.append(
            (envelope.mail_from, envelope.rcpt_tos, email.message_from_bytes(envelope.content))
        )
        return "250 OK"


def authenticate(_server, _session, _envelope, _mechanism, auth_data) -> AuthResult:
    """aiosmtpd's authenticator: user `notify` with the password SECRET, nothing else."""
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"notify",
        SECRET.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself
