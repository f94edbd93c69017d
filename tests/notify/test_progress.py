"""What the notify service may commit (notify/progress.py): an alert's offset only once each of its
deliveries is settled, in whatever order they settle."""

from __future__ import annotations

from stream_worker.notify.progress import Progress


def test_position_waits_for_the_oldest_unsettled_alert() -> None:
    progress = Progress()
    progress.assign(0)
    assert progress.committable() == {}
    progress.add(0, 10, 2)  # two targets
    progress.add(0, 11, 0)  # no target wanted it
    progress.add(0, 12, 1)
    assert progress.committable() == {0: 10}
    progress.settle(0, 12)
    progress.settle(0, 10)
    assert progress.committable() == {0: 10}  # one of offset 10's two deliveries is still out
    assert progress.pending() == 1
    progress.settle(0, 10)
    assert progress.committable() == {0: 13}
    progress.mark_committed({0: 13})
    assert progress.committable() == {}


def test_revoked_partitions_are_forgotten_and_late_outcomes_ignored() -> None:
    progress = Progress()
    progress.assign(0)
    progress.assign(1)
    progress.add(0, 5, 1)
    progress.add(1, 7, 3)
    assert progress.revoke(1) == 3
    progress.settle(1, 7)  # an outcome that comes after the revocation
    progress.add(1, 8, 0)
    assert progress.committable() == {0: 5}
    assert progress.assigned() == [0]
