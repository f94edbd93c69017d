"""Real servers the notify tests deliver to: an SMTP server (aiosmtpd) that requires STARTTLS and
AUTH, and a mosquitto with a password file (user `notify` with SECRET, user `reader`)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from certificates import make_authority

from stream_worker.launchers.mosquitto import Mosquitto
from stream_worker.launchers.ports import free_port
from tests.notify.receivers import SECRET, Inbox, authenticate


@pytest.fixture
def smtp(tmp_path: Path):
    """(port, inbox, CA file, controller): the server on 127.0.0.1 with a certificate for localhost."""
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
        auth_required=True,
    )
    controller.start()
    yield controller.port, inbox, authority.ca, controller
    controller.stop()


@pytest.fixture
def broker(tmp_path: Path):
    server = Mosquitto(tmp_path / "mosquitto", users={"notify": SECRET, "reader": "reader"}).start()
    yield server
    server.stop()
