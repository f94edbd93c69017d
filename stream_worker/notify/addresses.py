"""The SSRF guard: where a target's host resolves, and whether this service may go there.

Whoever can edit the targets (a console admin) could otherwise make the service POST to the cloud
metadata endpoint, a database's admin port or anything else inside the network. Every address that
is not globally routable is refused (loopback, private, link-local with 169.254.169.254, shared
and reserved ranges), unless the operator allows them (`--allow-private-targets`). An IPv6 address
that carries an IPv4 one (mapped, NAT64, 6to4, Teredo) is judged by that IPv4 address too, since
the network delivers it there; the deprecated and local-use forms are refused whole. The request
then goes to the address that was checked, never to a second lookup of the name that could answer
otherwise (DNS rebinding): see webhook.py. A refusal never says where the name resolved to: the
delivery log would tell its readers what internal names stand for.
"""

from __future__ import annotations

import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address in the last 32 bits
NEVER_ROUTED = (
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible (RFC 4291, deprecated); :: and ::1 too
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (RFC 2765)
    ipaddress.IPv6Network("64:ff9b:1::/48"),  # NAT64 for local use (RFC 8215): any prefix length
)
REFUSED = "refused: address not allowed (--allow-private-targets allows loopback, private and internal ones)"


class TargetRefused(Exception):
    """The target's address may not be reached from here, or its name does not resolve."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address that `address` carries (IPv4-mapped, NAT64, 6to4, Teredo's client), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address, its bits un-inverted
    return None


def address_problem(address: IPAddress) -> str | None:
    """Why this address is not one to deliver to without --allow-private-targets, or None."""
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in NEVER_ROUTED):
            return "is an IPv6 form that is never routed on the internet"
        inner = embedded_ipv4(address)
        if inner is not None:
            problem = address_problem(inner)
            if problem is not None:
                return f"carries the IPv4 address {inner}, which {problem}"
            if address.ipv4_mapped is not None:
                return None  # a socket connects to the IPv4 address itself
    if address.is_multicast:
        return "is a multicast address"
    if not address.is_global:
        return "is a loopback, private, link-local or reserved address"
    return None


def resolve(host: str, port: int, allow_private: bool) -> IPAddress:
    """The address to connect to for `host`: the first one it resolves to, every one of them
    checked (a name that also resolves to a private address is refused whole). The errors name
    neither the host nor an address."""
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise TargetRefused("refused: the host name does not resolve") from None
    addresses = [ipaddress.ip_address(str(answer[4][0]).split("%", 1)[0]) for answer in answers]
    if not addresses:
        raise TargetRefused("refused: the host name does not resolve")
    if not allow_private and any(address_problem(address) is not None for address in addresses):
        raise TargetRefused(REFUSED)
    return addresses[0]
