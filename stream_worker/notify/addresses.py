"""The SSRF guard: where a target's host resolves, and whether this service may go there.

Whoever can edit the targets (a console admin) could otherwise make the service POST to the cloud
metadata endpoint, a database's admin port or anything else inside the network. Every address that
is not globally routable is refused (loopback, private, link-local with 169.254.169.254, shared
and reserved ranges, IPv4 inside IPv6), unless the operator allows them (`--allow-private-targets`).
The request then goes to the address that was checked, never to a second lookup of the name that
could answer otherwise (DNS rebinding): see webhook.py.
"""

from __future__ import annotations

import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(Exception):
    """The target's address may not be reached from here, or its name does not resolve."""


def address_problem(address: IPAddress) -> str | None:
    """Why this address is not one to deliver to without --allow-private-targets, or None."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_multicast:
        return "is a multicast address"
    if not address.is_global:
        return "is a loopback, private, link-local or reserved address (--allow-private-targets allows it)"
    return None


def resolve(host: str, port: int, allow_private: bool) -> IPAddress:
    """The address to connect to for `host`: the first one it resolves to, every one of them
    checked (a name that also resolves to a private address is refused whole)."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise TargetRefused(f"host {host!r} does not resolve: {error}") from None
    addresses = [ipaddress.ip_address(str(answer[4][0]).split("%", 1)[0]) for answer in answers]
    if not addresses:
        raise TargetRefused(f"host {host!r} does not resolve")
    if not allow_private:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None:
                raise TargetRefused(f"host {host!r} resolves to {address}, which {problem}")
    return addresses[0]
