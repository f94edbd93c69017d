"""The SSRF guard (notify/addresses.py): IPv6 addresses that carry an IPv4 one are judged by it,
a refusal names no address, and a delivery goes to the address that was checked, never to a
second answer of the name (DNS rebinding), against real local HTTP and SMTP receivers."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from aiosmtpd.controller import Controller
from store_records import plate_sighting
from support import serve_http

from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.ports import free_port
from stream_worker.notify import addresses
from stream_worker.notify.addresses import address_problem
from stream_worker.notify.mail import MailSender
from stream_worker.notify.rules import EventKind
from stream_worker.notify.webhook import EVENT_HEADER, WebhookSender
from tests.notify.receivers import SECRET, Inbox
from tests.notify.test_webhook import BODY, Received, recording, target


def teredo(server: str, client: str, port: int = 40000) -> str:
    """A Teredo address (RFC 4380): the client's address and port are stored inverted."""
    value = (0x2001_0000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | ((port ^ 0xFFFF) << 32)
    return str(ipaddress.IPv6Address(value | (int(ipaddress.IPv4Address(client)) ^ 0xFFFF_FFFF)))


REFUSED = [
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:224.0.0.1",
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a00:1",  # 10.0.0.1
    "64:ff9b::a9fe:a9fe",  # 169.254.169.254
    "64:ff9b::c0a8:101",  # 192.168.1.1
    "64:ff9b::6440:1",  # 100.64.0.1, shared
    "64:ff9b::",  # 0.0.0.0
    "64:ff9b:1::7f00:1",  # local-use NAT64: refused whatever it carries
    "64:ff9b:1:7f00:1::",
    "64:ff9b:1::808:808",
    "::127.0.0.1",  # IPv4-compatible: deprecated, refused whatever it carries
    "::10.0.0.1",
    "::8.8.8.8",
    "::ffff:0:7f00:1",  # IPv4-translated
    "::ffff:0:808:808",
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:7f00:1:1::1",
    "2002:a00:1::1",  # 10.0.0.1
    "2002:a9fe:a9fe::",  # 169.254.169.254
    "2002:c0a8:101::1",  # 192.168.1.1
    teredo("65.54.227.120", "127.0.0.1"),
    teredo("65.54.227.120", "10.0.0.1"),
    teredo("65.54.227.120", "8.8.8.8"),  # Teredo is never a target's address
    "127.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00:ec2::254",
    "ff02::1",
]
ALLOWED = ["8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111"]


@pytest.mark.parametrize("address", REFUSED)
def test_refused_addresses(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_allowed_addresses(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("address", "inner"),
    [
        ("::ffff:10.1.2.3", "10.1.2.3"),
        ("64:ff9b::7f00:1", "127.0.0.1"),
        ("2002:c0a8:101:5::1", "192.168.1.1"),
        (teredo("65.54.227.120", "192.168.1.1"), "192.168.1.1"),
        ("2606:4700:4700::1111", None),
    ],
)
def test_the_ipv4_address_inside(address: str, inner: str | None) -> None:
    found = addresses.embedded_ipv4(ipaddress.IPv6Address(address))
    assert found == (ipaddress.IPv4Address(inner) if inner else None)


@pytest.mark.parametrize(
    "host", ["[64:ff9b::7f00:1]", "[::127.0.0.1]", "[2002:7f00:1::]", "[::ffff:7f00:1]", "localhost"]
)
def test_a_delivery_to_loopback_inside_ipv6_is_refused_without_naming_the_address(host: str) -> None:
    received = Received()
    sender = WebhookSender(allow_private=False, secrets={"HOOK_SECRET": SECRET})
    with serve_http(recording(received)) as port:
        attempt = sender.send(target(f"http://{host}:{port}/hook"), "a-1", BODY)
    assert (attempt.ok, attempt.retry) == (False, False)  # refused for good, not a network error
    assert (attempt.error or "").startswith("refused: address not allowed"), attempt.error
    for told in ("127.0.0.1", "::1", "7f00", "localhost", "ffff"):
        assert told not in (attempt.error or "")
    assert received.requests == []


def test_a_rebinding_name_gets_the_checked_address_not_the_second_answer(monkeypatch) -> None:
    """The name answers a public address to the guard's lookup and 127.0.0.1 to any later one:
    the POST must reach the public address (here served by a second local receiver), never the
    receiver on 127.0.0.1 that the second answer points to."""
    public = "93.184.215.14"
    real = socket.getaddrinfo
    lookups: list[str] = []
    internal, outside = Received(), Received()
    with serve_http(recording(internal)) as internal_port, serve_http(recording(outside)) as outside_port:

        def getaddrinfo(host, port, *args, **kwargs):
            if host == "hooks.rebind.test":
                lookups.append(host)
                answer = public if len(lookups) == 1 else "127.0.0.1"
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, port))]
            if host == public:  # the route to the public address: the outside receiver
                return real("127.0.0.1", outside_port, *args, **kwargs)
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        sender = WebhookSender(allow_private=False, secrets={"HOOK_SECRET": SECRET})
        attempt = sender.send(target(f"http://hooks.rebind.test:{internal_port}/hook"), "a-1", BODY)
        assert lookups == ["hooks.rebind.test"]  # the guard's lookup, and no second one
        again = sender.send(target(f"http://hooks.rebind.test:{internal_port}/hook"), "a-2", BODY)
    assert attempt.ok, attempt.error
    assert [headers[EVENT_HEADER] for _, headers, _ in outside.requests] == ["a-1"]
    assert outside.requests[0][1]["Host"] == f"hooks.rebind.test:{internal_port}"
    assert (again.ok, again.retry) == (False, False)  # the next attempt's check sees 127.0.0.1
    assert internal.requests == []


def test_the_guard_refuses_a_name_with_any_internal_answer(monkeypatch) -> None:
    answers = ["93.184.215.14", "127.0.0.1"]

    def getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, port)) for answer in answers]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(addresses.TargetRefused, match=r"^refused: address not allowed") as refused:
        addresses.resolve("hooks.rebind.test", 80, allow_private=False)
    assert "127.0.0.1" not in str(refused.value) and "93.184" not in str(refused.value)


def test_a_rebinding_mail_server_name_gets_the_checked_address(monkeypatch) -> None:
    """The same for an e-mail target (notify/mail.py): the SMTP connection goes to the address the
    guard checked, served here by the outside server, never to the second answer 127.0.0.1."""
    public = "93.184.215.14"
    real = socket.getaddrinfo
    lookups: list[str] = []
    internal, outside = Inbox(), Inbox()
    servers = [Controller(inbox, hostname="127.0.0.1", port=free_port()) for inbox in (internal, outside)]
    for server in servers:
        server.start()
    try:

        def getaddrinfo(host, port, *args, **kwargs):
            if host == "mail.rebind.test":
                lookups.append(host)
                answer = public if len(lookups) == 1 else "127.0.0.1"
                return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, port))]
            if host == public:
                return real("127.0.0.1", servers[1].port, *args, **kwargs)
            return real(host, port, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        mail = parse_target(
            {
                "type": "email",
                "host": "mail.rebind.test",
                "port": servers[0].port,
                "tls": False,
                "sender": "plates@example.com",
                "recipients": ["guard@example.com"],
            }
        )
        sighting = plate_sighting("visitor", "X999YX99")
        sender = MailSender(allow_private=False, secrets={})
        attempt = sender.send(mail, sighting.sighting_id, sighting.to_json(), EventKind.UNKNOWN_VEHICLE)
        sender.close()
    finally:
        for server in servers:
            server.stop()
    assert attempt.ok, attempt.error
    assert lookups == ["mail.rebind.test"]
    assert len(outside.messages) == 1 and internal.messages == []
