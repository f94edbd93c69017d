import pytest

from stream_worker.connector.lag import FramesBacklog, Position


def test_unknown_until_the_group_has_committed():
    backlog = FramesBacklog()
    assert backlog.wait_s(0, 100.0) is None
    backlog.delivered(0, 0, 90.0)
    backlog.observe({0: Position(None, 1)}, 0.0)
    assert backlog.wait_s(0, 100.0) is None
    assert backlog.age_s(0, 100.0) is None


def test_nothing_behind_is_no_wait():
    backlog = FramesBacklog()
    backlog.delivered(0, 4, 99.0)
    backlog.observe({0: Position(5, 5)}, 0.0)
    assert backlog.wait_s(0, 100.0) == 0.0
    assert backlog.age_s(0, 100.0) == 0.0


def test_the_wait_is_the_backlog_over_the_workers_pace():
    backlog = FramesBacklog(window_s=4)
    for second in range(5):  # the workers read 2 frames a second; 12 frames wait at the end
        backlog.observe({0: Position(2 * second, 12 + 2 * second)}, float(second))
    assert backlog.wait_s(0, 100.0) == pytest.approx(6.0)


def test_without_a_pace_the_wait_is_the_age_of_the_oldest_frame_not_read():
    backlog = FramesBacklog(window_s=4)
    for offset in range(10):
        backlog.delivered(0, offset, 90.0 + offset)
    for second in range(5):  # a stopped worker
        backlog.observe({0: Position(3, 10)}, float(second))
    assert backlog.wait_s(0, 100.0) == pytest.approx(7.0)
    assert backlog.age_s(0, 100.0) == pytest.approx(7.0)


def test_the_age_is_of_this_connectors_oldest_frame_not_committed():
    backlog = FramesBacklog()
    backlog.delivered(0, 3, 95.0)
    backlog.delivered(0, 7, 98.0)  # offsets between: other producers' records
    backlog.observe({0: Position(4, 8)}, 0.0)
    assert backlog.age_s(0, 100.0) == pytest.approx(2.0)


def test_partitions_are_apart():
    backlog = FramesBacklog()
    backlog.delivered(1, 0, 50.0)
    backlog.observe({0: Position(3, 3), 1: Position(0, 1)}, 0.0)
    assert backlog.age_s(0, 100.0) == 0.0
    assert backlog.age_s(1, 100.0) == pytest.approx(50.0)


def test_offsets_that_go_back_are_ignored():
    backlog = FramesBacklog()
    backlog.delivered(0, 5, 99.0)
    backlog.delivered(0, 2, 10.0)
    backlog.observe({0: Position(0, 6)}, 0.0)
    assert backlog.age_s(0, 100.0) == pytest.approx(1.0)
