"""The sign-in limiter: slows password guessing without letting a guesser lock others out.

Wrong passwords are counted per (client address, user name), PER_NAME in WINDOW_S, and per client
address whatever the names, PER_CLIENT (looser: it stops one client spraying many names). Behind
an ingress every user would share its address: the console believes X-Forwarded-For only from
the proxies `--forwarded-allow-ips` names, so the address is the real client's. A client over its
limit is refused (429) before its password is hashed; a sign-in in progress counts as a failure
until it is settled, so 64 parallel guesses from one client cost at most PER_NAME scrypt hashes.
The table is bounded (least recently used forgotten first), and passwords are hashed on
`parallel` threads of their own (16 MiB of scrypt each), whoever asks: on the server's many
worker threads, each thread's malloc arena kept its own 16 MiB buffers.
"""

from __future__ import annotations

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
    def _keys(client: str, name: str) -> tuple[Key, Key]:
        return ("client", client), ("name", client, name)

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
        client_key, name_key = self._keys(client, name)
        with self._lock:
            by_client = self._count(client_key, now)
            wait_s = self._wait_s(by_client, self.PER_CLIENT, now)
            if wait_s:  # refused before the per-name row is even made: a sprayer fills nothing
                return wait_s
            by_name = self._count(name_key, now)
            wait_s = self._wait_s(by_name, self.PER_NAME, now)
            if wait_s:
                return wait_s
            by_client.pending += 1
            by_name.pending += 1
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
