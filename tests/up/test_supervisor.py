"""The supervisor's rules on children that only record what is done to them (the real children
are exercised by test_up.py): a dead child is restarted after its delay, counted, said, and its
new process group handed to the watchdog; a failed restart is tried again later; stop goes newest
first and goes on past a child that fails to stop."""

from __future__ import annotations

import threading

import pytest

from stream_worker.up.restarts import RestartPolicy
from stream_worker.up.supervisor import Supervisor


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class RecordedChild:
    def __init__(self, name: str, journal: list[str], first_pid: int) -> None:
        self.name = name
        self.journal = journal
        self.pid = first_pid
        self.running = False
        self.fail_starts = 0
        self.fail_stop = False

    def start(self, stopping: threading.Event) -> None:
        if self.fail_starts:
            self.fail_starts -= 1
            raise RuntimeError("port taken")
        self.pid += 1
        self.running = True
        self.journal.append(f"start {self.name}")

    def is_running(self) -> bool:
        return self.running

    def process_groups(self) -> list[int]:
        return [self.pid] if self.running else []

    def stop(self) -> None:
        self.journal.append(f"stop {self.name}")
        self.running = False
        if self.fail_stop:
            raise OSError("gone wrong")

    def exit_reason(self) -> str:
        return "killed by SIGKILL"

    def status(self) -> dict[str, object]:
        return {"log": f"{self.name}.log"}


class Watcher:
    def __init__(self) -> None:
        self.groups: list[int] = []

    def watch(self, pgid: int) -> None:
        self.groups.append(pgid)


@pytest.fixture
def setup() -> tuple[Supervisor, Clock, Watcher, list[str], list[str]]:
    clock, watcher, said, journal = Clock(), Watcher(), [], []
    policy = RestartPolicy(first_delay_s=0.0, delay_s=1.0, max_delay_s=4.0, stable_s=60.0)
    supervisor = Supervisor(watcher, policy, threading.Event(), said.append, clock)
    return supervisor, clock, watcher, said, journal


def test_a_dead_child_is_restarted_counted_said_and_watched(setup) -> None:
    supervisor, clock, watcher, said, journal = setup
    worker = RecordedChild("worker", journal, 100)
    supervisor.start(worker)
    assert watcher.groups == [101]
    worker.running = False
    clock.now = 5.0
    supervisor.check()
    assert worker.running and worker.pid == 102 and watcher.groups == [101, 102]
    assert said == [
        "worker died (killed by SIGKILL); restarting it now",
        "worker restarted (restart 1, pid 102)",
    ]
    status = supervisor.status()["worker"]
    assert status == {"state": "running", "pids": [102], "restarts": 1, "last_exit": "killed by SIGKILL",
                      "log": "worker.log"}  # fmt: skip


def test_a_second_death_in_a_row_waits_and_a_failed_start_is_tried_again(setup) -> None:
    supervisor, clock, _watcher, said, journal = setup
    store = RecordedChild("store", journal, 200)
    supervisor.start(store)
    store.running = False
    supervisor.check()  # first death: restarted at once
    store.running = False
    clock.now = 1.0
    supervisor.check()  # second in a row: in 1 s
    assert not store.running and supervisor.status()["store"]["state"] == "restarting"
    store.fail_starts = 1
    clock.now = 2.0
    supervisor.check()  # due: the start fails, next try in 2 s
    assert not store.running and said[-1] == "store could not start (port taken); trying again in 2 s"
    clock.now = 3.9
    supervisor.check()
    assert not store.running
    clock.now = 4.0
    supervisor.check()
    assert store.running and supervisor.status()["store"]["restarts"] == 2


def test_stop_goes_newest_first_past_a_child_that_fails_to_stop(setup) -> None:
    supervisor, _clock, _watcher, _said, journal = setup
    children = [RecordedChild(name, journal, 0) for name in ("broker", "triton", "store", "worker")]
    for child in children:
        supervisor.start(child)
    children[2].fail_stop = True
    supervisor.stop()
    assert journal[4:] == ["stop worker", "stop store", "stop triton", "stop broker"]
    assert {name: status["state"] for name, status in supervisor.status().items()} == dict.fromkeys(
        ("broker", "triton", "store", "worker"), "stopped"
    )


def test_a_first_start_that_fails_still_leaves_the_child_to_stop(setup) -> None:
    supervisor, _clock, _watcher, _said, journal = setup
    broker = RecordedChild("broker", journal, 0)
    broker.fail_starts = 1
    with pytest.raises(RuntimeError):
        supervisor.start(broker)
    supervisor.stop()
    assert journal == ["stop broker"]


def test_nothing_is_restarted_once_stopping(setup) -> None:
    supervisor, _clock, _watcher, _said, journal = setup
    worker = RecordedChild("worker", journal, 0)
    supervisor.start(worker)
    worker.running = False
    supervisor._stopping.set()
    supervisor.check()
    assert journal == ["start worker"]
