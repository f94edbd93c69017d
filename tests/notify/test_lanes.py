"""A target's lane (notify/lanes.py) with a scripted send: the pure retry logic (capped backoff, the
retry budget, final refusals, a dead target's queue moving on, removal). The real HTTP side is in
test_notify_integration.py."""

from __future__ import annotations

import queue
import time
from datetime import UTC, datetime

from stream_worker.contracts.notify import parse_target
from stream_worker.notify.lanes import Backoff, Delivery, Lane, Outcome
from stream_worker.notify.rules import EventKind
from stream_worker.notify.webhook import Attempt

TARGET = parse_target({"type": "webhook", "url": "https://hooks.example.com/x"})
OK = Attempt(True, retry=False, status=200)
DOWN = Attempt(False, retry=True, error="ConnectError: refused")
GONE = Attempt(False, retry=False, status=404, error="answered 404 Not Found")


def delivery(event_id: str, budget_s: float = 5.0, offset: int = 0) -> Delivery:
    return Delivery(
        EventKind.ALERT, "t", event_id, b"{}", 0, offset, 1, datetime.now(UTC), time.monotonic() + budget_s
    )


class Script:
    """Answers from a list, then the last one for ever; records the event ids asked."""

    def __init__(self, *answers: Attempt) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def send(self, _target: object, event_id: str, _body: bytes, _kind: object) -> Attempt:
        self.asked.append(event_id)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def close(self) -> None:
        self.closed = True


def outcomes_of(
    outcomes: queue.SimpleQueue[Outcome],
    count: int,
    timeout_s: float = 10.0,
    retrying: list[Outcome] | None = None,
) -> list[Outcome]:
    """The next `count` settled outcomes; the retried attempts' (the delivery log's) put in `retrying`."""
    settled: list[Outcome] = []
    while len(settled) < count:
        outcome = outcomes.get(timeout=timeout_s)
        if not outcome.retrying:
            settled.append(outcome)
        elif retrying is not None:
            retrying.append(outcome)
    return settled


def run_lane(send: Script, backoff: Backoff) -> tuple[Lane, queue.SimpleQueue[Outcome], list[str]]:
    outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
    retried: list[str] = []
    return Lane("t", TARGET, send, backoff, outcomes, retried.append).start(), outcomes, retried


def test_backoff_doubles_up_to_its_cap() -> None:
    backoff = Backoff(0.5, 4.0)
    assert [backoff.wait_s(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.wait_s(10_000) == 4.0


def test_retried_until_the_target_takes_it_with_the_same_event_id() -> None:
    send = Script(DOWN, DOWN, OK)
    lane, outcomes, retried = run_lane(send, Backoff(0.01, 0.02))
    lane.put(delivery("e1"))
    retrying: list[Outcome] = []
    [outcome] = outcomes_of(outcomes, 1, retrying=retrying)
    lane.stop(discard=False)
    assert outcome.ok and outcome.delivery.attempts == 3
    assert send.asked == ["e1", "e1", "e1"]
    assert retried == ["t", "t"]
    # each retried attempt is an outcome for the delivery log, with the target's answer
    assert [(o.retrying, o.ok, o.status, o.delivery.event_id) for o in retrying] == [
        (True, False, DOWN.status, "e1")
    ] * 2


def test_a_final_refusal_is_not_retried() -> None:
    send = Script(GONE)
    lane, outcomes, _ = run_lane(send, Backoff(0.01, 0.02))
    lane.put(delivery("e1"))
    [outcome] = outcomes_of(outcomes, 1)
    lane.stop(discard=False)
    assert not outcome.ok and outcome.status == 404 and send.asked == ["e1"]


def test_a_dead_target_gives_up_after_the_budget_and_its_queue_moves_on() -> None:
    send = Script(DOWN)
    lane, outcomes, _ = run_lane(send, Backoff(0.05, 0.1))
    started = time.monotonic()
    for k in range(20):
        lane.put(delivery(f"e{k}", budget_s=0.5, offset=k))
    settled = outcomes_of(outcomes, 20)
    lane.stop(discard=False)
    assert [o.delivery.event_id for o in settled] == [f"e{k}" for k in range(20)]
    assert all(not o.ok and o.error == DOWN.error for o in settled)
    # The queued ones, their budget spent while the first was retried, are settled without 20 budgets.
    assert time.monotonic() - started < 5
    assert send.asked.count("e19") <= 1


def test_a_removed_target_drops_what_is_left() -> None:
    send = Script(DOWN)
    lane, outcomes, _ = run_lane(send, Backoff(0.05, 0.1))
    for k in range(3):
        lane.put(delivery(f"e{k}", budget_s=60, offset=k))
    time.sleep(0.2)
    lane.stop(discard=True)
    assert lane.join(5) and send.closed
    dropped = outcomes_of(outcomes, 3)
    assert sorted(o.delivery.event_id for o in dropped) == ["e0", "e1", "e2"]
    assert all(o.dropped for o in dropped)


class Broken:
    def send(self, *_args: object) -> Attempt:
        raise ValueError("https://user:s3cret@hooks.example.com is not a URL")

    def close(self) -> None:
        pass


def test_a_sender_that_raises_fails_the_delivery_not_the_lane() -> None:
    outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
    lane = Lane("t", TARGET, Broken(), Backoff(0.01, 0.02), outcomes).start()
    lane.put(delivery("e1"))
    lane.put(delivery("e2", offset=1))
    settled = outcomes_of(outcomes, 2)
    lane.stop(discard=False)
    assert [o.delivery.event_id for o in settled] == ["e1", "e2"]  # the lane went on
    assert all(not o.ok and o.error == "unexpected ValueError" for o in settled)  # no message: no secret


def test_a_missing_secret_holds_every_delivery_past_its_budget_then_they_go_out() -> None:
    """Held (a secret the target names is missing): never settled as failed, however long; the
    budget of the deliveries queued behind stops too, so that they are tried once it is set."""
    held = Attempt(False, retry=True, error="secret(s) not set where notify runs: HOOK", hold=True)
    send = Script(*[held] * 12, OK)
    lane, outcomes, _retried = run_lane(send, Backoff(0.05, 0.1))
    for k in range(3):
        lane.put(delivery(f"a-{k}", budget_s=0.3))
    logged: list[Outcome] = []
    settled = outcomes_of(outcomes, 3, retrying=logged)
    lane.stop(discard=False)
    assert [o.delivery.event_id for o in settled] == ["a-0", "a-1", "a-2"] and all(o.ok for o in settled)
    assert [o.held for o in logged] == [True]  # said once, not on every try
    assert send.asked.count("a-0") == 13
