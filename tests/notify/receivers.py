"""The notify tests' receivers (importable as tests.notify.receivers): a webhook receiver that checks
each signature and answers as told, and an SMTP inbox with its authenticator for aiosmtpd (the
`smtp` fixture of tests/notify/conftest.py serves it with STARTTLS and AUTH required), which
records each message's connection and can refuse or drop it."""

from __future__ import annotations

import asyncio
import email
import hashlib
import hmac
import http.server
import threading
import time
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

import orjson
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from standardwebhooks import Webhook, WebhookVerificationError
from support import reply

from stream_worker.notify.webhook import EVENT_HEADER, KIND_HEADER, SIGNATURE_HEADER

SECRET = "s3cret with space/and slash"  # every target's secret and password in these tests


@dataclass
class Hook:
    """A webhook receiver: what it got (event ids, whether both signatures checked: Standard
    Webhooks' with the `standardwebhooks` package, and the legacy one), and how it
    answers: `fail` says 500, `hang` keeps the request past the target's timeout, until `healed`;
    the first `fail_first` requests get a 500 whatever the mode."""

    mode: str = "ok"  # ok | fail | hang
    delay_s: float = 0.0
    fail_first: int = 0
    healed: threading.Event = field(default_factory=threading.Event)
    received: list[str] = field(default_factory=list)  # event ids, in order, every attempt
    paths: list[str] = field(default_factory=list)  # each request's path (and query)
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
                signed = self.headers[SIGNATURE_HEADER] == expected and standard(body, self.headers)
                event_id = self.headers[EVENT_HEADER]
                with hook.lock:
                    hook.received.append(event_id)
                    hook.paths.append(self.path)
                    hook.kinds.append(self.headers[KIND_HEADER])
                    hook.bodies[event_id] = orjson.loads(body)
                    hook.bad_signatures += not signed
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


def standard(body: bytes, headers: Message) -> bool:
    """Whether the Standard Webhooks signature checks (id, timestamp within 5 minutes, body)."""
    try:
        Webhook(SECRET.encode()).verify(body, dict(headers), json_parse=False)
    except WebhookVerificationError:
        return False
    return True


class Inbox:
    """What the server received, and on which connection: `peer` (the client's address and port)
    names a TCP connection; STARTTLS and AUTH are recorded per message."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []
        self.sessions: list[Delivered] = []
        self.quits: list[object] = []
        self.servers: list[Any] = []  # aiosmtpd's SMTP protocol per message, to drop its connection
        self.refuse_mail = 0  # answer the next MAIL commands with 421 (the server going away)
        self.drop_after_data = False  # close the connection once a message is received, unanswered

    async def handle_MAIL(self, _server, _session, envelope, address, options) -> str:
        if self.refuse_mail:
            self.refuse_mail -= 1
            return "421 4.3.2 service shutting down"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        self.messages.append(
            (envelope.mail_from, envelope.rcpt_tos, email.message_from_bytes(envelope.content))
        )
        self.sessions.append(Delivered(session.peer, session.ssl is not None, bool(session.authenticated)))
        self.servers.append(server)
        if self.drop_after_data:
            server.transport.close()
        return "250 OK"

    async def handle_QUIT(self, _server, session, _envelope) -> str:
        self.quits.append(session.peer)
        return "221 Bye"

    def connections(self) -> list[int]:
        """Each message's connection, numbered in order of first use: [0, 0, 1] is two messages
        on the first connection, then one on a second."""
        order: dict[object, int] = {}
        return [order.setdefault(session.peer, len(order)) for session in self.sessions]


@dataclass(frozen=True)
class Delivered:
    peer: object
    tls: bool
    authenticated: bool


def drop_connections(controller: Controller, inbox: Inbox) -> None:
    """The server closes every connection it served, as an SMTP server does with idle clients."""

    async def close() -> None:
        for server in inbox.servers:
            if server.transport is not None:
                server.transport.close()

    asyncio.run_coroutine_threadsafe(close(), controller.loop).result(timeout=5)


def authenticate(_server, _session, _envelope, _mechanism, auth_data) -> AuthResult:
    """aiosmtpd's authenticator: user `notify` with the password SECRET, nothing else."""
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"notify",
        SECRET.encode(),
    )
    return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself
