"""The sign-in limiter: slows password guessing; a guesser locks nobody out but the name it
guesses, and that one only past PER_ACCOUNT.

Wrong passwords are counted per (client, user name), PER_NAME in WINDOW_S, and per client whatever
the names, PER_CLIENT (looser: it stops one client spraying many names). A client is its address,
an IPv6 one grouped by its /64 (one host holds a whole /64 and picks any address in it). Per user
name from any client, PER_ACCOUNT (looser again) stops a guesser spread over many addresses; past
it, that name signs in with no password until the window passes (its API tokens still work):
a lock-out its owner can only wait out, so the cap is high. Behind
an ingress every user would share its address: the console believes X-Forwarded-For only from
the proxies `--forwarded-allow-ips` names, so the address is the real client's. A client over its
limit is refused (429) before its password is hashed; a sign-in in progress counts as a failure
until it is settled, so 64 parallel guesses from one client cost at most PER_NAME scrypt hashes.
The table is bounded (least recently used forgotten first), and passwords are hashed on
`parallel` threads of their own (16 MiB of scrypt each), whoever asks: on the server's many
worker threads, each thread's malloc arena kept its own 16 MiB buffers.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
Key = tuple[str, ...]


class SignInBusy(RuntimeError):
    """Too many passwords are being checked at once: the caller answers 503."""


@dataclass
class _Count:
    failures: deque[float] = field(default_factory=deque)
    pending: int = 0


class SignInLimiter:
    PER_NAME = 10
    PER_CLIENT = 30
    PER_ACCOUNT = 50
    WINDOW_S = 600.0
    BUSY_WAIT_S = 10.0  # how long a sign-in waits for a free hashing slot before 503

    def __init__(self, max_entries: int = 10_000, parallel: int = 4) -> None:
        self.max_entries = max_entries
        self._counts: OrderedDict[Key, _Count] = OrderedDict()
        self._lock = threading.Lock()
        self._hashing = threading.BoundedSemaphore(parallel)
        self._hashers = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="sign-in")

    def __len__(self) -> int:
        return len(self._counts)

    @staticmethod
    def _keys(client: str, name: str) -> tuple[Key, Key, Key]:
        client = client_of(client)
        return ("client", client), ("account", name), ("name", client, name)

    def _count(self, key: Key, now: float) -> _Count:
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = _Count()
            while len(self._counts) > self.max_entries:
                self._counts.popitem(last=False)
        else:
            self._counts.move_to_end(key)
        while count.failures and count.failures[0] <= now - self.WINDOW_S:
            count.failures.popleft()
        return count

    def _wait_s(self, count: _Count, limit: int, now: float) -> float:
        if len(count.failures) + count.pending < limit:
            return 0.0
        return max(1.0, count.failures[0] + self.WINDOW_S - now) if count.failures else 1.0

    def admit(self, client: str, name: str) -> float:
        """0 and a sign-in reserved (settle it), or the seconds this client must wait (refused)."""
        now = time.monotonic()
        client_key, account_key, name_key = self._keys(client, name)
        with self._lock:
            by_client = self._count(client_key, now)
            wait_s = self._wait_s(by_client, self.PER_CLIENT, now)
            if wait_s:  # refused before the per-name rows are even made: a sprayer fills nothing
                return wait_s
            counts = [by_client]
            for key, limit in ((account_key, self.PER_ACCOUNT), (name_key, self.PER_NAME)):
                count = self._count(key, now)
                wait_s = self._wait_s(count, limit, now)
                if wait_s:
                    return wait_s
                counts.append(count)
            for count in counts:
                count.pending += 1
            return 0.0

    def settle(self, client: str, name: str, failed: bool) -> None:
        """The end of a sign-in `admit` let through: a failure counts from now on."""
        now = time.monotonic()
        with self._lock:
            for key in self._keys(client, name):
                count = self._count(key, now)
                count.pending = max(0, count.pending - 1)
                if failed:
                    count.failures.append(now)

    def hashing(self, check: Callable[..., T], *args: object) -> T:
        """`check(*args)` on a hashing thread, once one is free (SignInBusy after BUSY_WAIT_S)."""
        if not self._hashing.acquire(timeout=self.BUSY_WAIT_S):
            raise SignInBusy("too many sign-ins at once: try again in a moment")
        try:
            return self._hashers.submit(check, *args).result()
        finally:
            self._hashing.release()


def client_of(address: str) -> str:
    """Whom an address counts as: an IPv6 address its /64, an IPv4-mapped one its IPv4 address,
    anything else itself."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return address
