"""A queue and a thread per target, so that a target that fails or hangs delays only itself.

A lane takes its deliveries in the order the alerts came and tries each until the target takes
it, refuses it for good, or the delivery's retry budget (counted from its arrival) is spent; the
wait between attempts doubles from `initial_s` up to `max_s`. A delivery whose target names a
secret that is missing is held: tried again at the same pace for as long as it takes, its budget
(and that of every delivery queued behind it) stopped meanwhile, never dead-lettered for it, so
that adding the secret (secrets.py reads it without a restart) sends it. While its target is
down, a lane does not spend a whole budget on each queued delivery in turn: one whose budget ran
out while it waited is settled at once with the last error, so a dead target's queue moves as fast
as alerts come. Outcomes (and each failed attempt that is retried, for the delivery log) go to the service's
thread through `outcomes`; the lane never touches Kafka.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from stream_worker.contracts.notify import NotifyTarget
from stream_worker.notify.rules import EventKind
from stream_worker.notify.webhook import Attempt

log = logging.getLogger(__name__)

IDLE_WAIT_S = 0.2


class Sender(Protocol):
    """How a lane reaches its target (webhook.py, mqtt.py): one per lane, closed when it ends."""

    def send(self, target: NotifyTarget, event_id: str, body: bytes, kind: EventKind) -> Attempt: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Backoff:
    initial_s: float
    max_s: float

    def wait_s(self, failures: int) -> float:
        """The wait after the `failures`-th failed attempt in a row."""
        return min(self.max_s, self.initial_s * 2 ** min(failures - 1, 60))


@dataclass(slots=True, eq=False)
class Delivery:
    """One event for one target; `kind` says which topic's `partition`, `offset` (and `epoch`) it
    holds back."""

    kind: EventKind
    target: str
    event_id: str
    body: bytes
    partition: int
    offset: int
    epoch: int
    alerted_at: datetime
    deadline: float  # monotonic: the end of its retry budget
    attempts: int = 0
    trial: bool = False  # the console's "send a test": holds back no offset, never dead-lettered
    held_mark: float = 0.0  # the lane's held time when it was queued: its budget stops while held
    replay: bool = False  # a dead letter sent again (replays.py): holds back no offset


@dataclass(frozen=True, slots=True)
class Outcome:
    delivery: Delivery
    ok: bool
    status: int | None = None
    error: str | None = None
    dropped: bool = False  # the target was removed or disabled: nobody to deliver to
    retrying: bool = False  # not settled: this attempt failed, another follows (the delivery log)
    held: bool = False  # with retrying: held until a secret the target names is set
    seconds: float = field(default=0.0)  # from the alert's alerted_at to the target's answer


class Lane:
    def __init__(
        self,
        name: str,
        target: NotifyTarget,
        sender: Sender,
        backoff: Backoff,
        outcomes: queue.SimpleQueue[Outcome],
        on_retry: Callable[[str], None] = lambda _name: None,
    ) -> None:
        self.name = name
        self.target = target  # replaced whole when the target's settings change
        self._sender = sender
        self._backoff = backoff
        self._outcomes = outcomes
        self._on_retry = on_retry
        self._queue: queue.SimpleQueue[Delivery] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._discard = False
        self._down_since: float | None = None  # its last attempt failed
        self._last_error: str | None = None
        self._held_s = 0.0  # how long this lane has held deliveries for a missing secret, in all
        self._thread = threading.Thread(target=self._run, name=f"notify-{name}", daemon=True)

    def start(self) -> Lane:
        self._thread.start()
        return self

    def put(self, delivery: Delivery) -> None:
        delivery.held_mark = self._held_s
        self._queue.put(delivery)

    def queued(self) -> int:
        return self._queue.qsize()

    def stop(self, discard: bool) -> None:
        """Stop after the attempt in progress. `discard`: the target is gone, so every delivery
        left is settled as dropped; else (the service stops) they are left unsettled."""
        self._discard = discard
        self._stop.set()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    delivery = self._queue.get(timeout=IDLE_WAIT_S)
                except queue.Empty:
                    continue
                self._deliver(delivery)
            if self._discard:
                self._drop_left()
        finally:
            self._sender.close()

    def _deadline(self, delivery: Delivery) -> float:
        """The end of its retry budget, later by the time the lane held deliveries since it came."""
        return delivery.deadline + self._held_s - delivery.held_mark

    def _deliver(self, delivery: Delivery) -> None:
        failures = holds = 0
        while not self._stop.is_set():
            now = time.monotonic()
            if self._down_since is not None and now >= self._deadline(delivery):
                self._settle(delivery, Attempt(False, retry=False, error=self._last_error))
                return
            attempt = self._attempt(delivery)
            delivery.attempts += 1
            if attempt.ok:
                self._down_since = None
                self._settle(delivery, attempt)
                return
            if attempt.hold:
                holds += 1
                self._hold(delivery, attempt, holds)
                continue
            if not attempt.retry:  # refused for good: the target is up, the alert is not wanted
                self._settle(delivery, attempt)
                return
            failures += 1
            self._down_since = self._down_since or time.monotonic()
            self._last_error = attempt.error
            wait_s = self._backoff.wait_s(failures)
            if time.monotonic() + wait_s > self._deadline(delivery):
                self._settle(delivery, attempt)
                return
            self._on_retry(self.name)
            self._outcomes.put(Outcome(delivery, False, attempt.status, attempt.error, retrying=True))
            log.info(
                "delivery failed, trying again",
                extra={
                    "target": self.name,
                    "event_id": delivery.event_id,
                    "attempts": delivery.attempts,
                    "status": attempt.status,
                    "error": attempt.error,
                    "wait_s": round(wait_s, 3),
                },
            )
            self._stop.wait(wait_s)
        if self._discard:
            self._outcomes.put(Outcome(delivery, ok=False, dropped=True))

    def _hold(self, delivery: Delivery, attempt: Attempt, holds: int) -> None:
        """Wait for the missing secret (its budget stopped meanwhile); said once per delivery."""
        self._down_since = None  # the target is not known to be down: nothing was sent to it
        if holds == 1:
            self._outcomes.put(Outcome(delivery, False, None, attempt.error, retrying=True, held=True))
            log.warning(
                "delivery held: a secret the target names is missing",
                extra={"target": self.name, "event_id": delivery.event_id, "error": attempt.error},
            )
        started = time.monotonic()
        self._stop.wait(self._backoff.wait_s(holds))
        self._held_s += time.monotonic() - started

    def _attempt(self, delivery: Delivery) -> Attempt:
        """One attempt; a sender's unexpected exception is a final failure named by its type only
        (its message could hold a resolved secret), never the end of the lane's thread."""
        try:
            return self._sender.send(self.target, delivery.event_id, delivery.body, delivery.kind)
        except Exception as error:
            log.error(
                "unexpected error delivering: given up",
                extra={
                    "target": self.name,
                    "event_id": delivery.event_id,
                    "error_type": type(error).__name__,
                },
            )
            return Attempt(False, retry=False, error=f"unexpected {type(error).__name__}")

    def _settle(self, delivery: Delivery, attempt: Attempt) -> None:
        seconds = max(0.0, (datetime.now(UTC) - delivery.alerted_at).total_seconds())
        self._outcomes.put(Outcome(delivery, attempt.ok, attempt.status, attempt.error, seconds=seconds))

    def _drop_left(self) -> None:
        while True:
            try:
                delivery = self._queue.get_nowait()
            except queue.Empty:
                return
            self._outcomes.put(Outcome(delivery, ok=False, dropped=True))
