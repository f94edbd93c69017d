from stream_worker.connector.clock import StreamClock


def test_wall_time_is_the_first_frames_wall_clock_plus_the_stream_offset():
    clock = StreamClock(max_drift_s=2)
    assert clock.wall(100.0, now=1000.0) == 1000.0
    assert clock.wall(100.5, now=1000.7) == 1000.5  # arrival jitter does not move it
    assert clock.due(101.0) == 1001.0


def test_drifting_too_far_re_anchors():
    clock = StreamClock(max_drift_s=2)
    clock.wall(0.0, now=1000.0)
    assert clock.wall(1.0, now=1004.0) == 1004.0  # the stream paused 3 s
    assert clock.anchors == 2
    assert clock.wall(2.0, now=1005.1) == 1005.0


def test_a_paced_file_is_not_checked_for_drift():
    clock = StreamClock(max_drift_s=2)
    clock.wall(0.0, now=1000.0)
    assert clock.wall(10.0, now=1003.0, check_drift=False) == 1010.0


def test_time_going_backwards_re_anchors_and_reset_forgets():
    clock = StreamClock()
    clock.wall(50.0, now=1000.0)
    assert clock.wall(0.0, now=1001.0) == 1001.0
    assert clock.due(-1.0) is None
    clock.reset()
    assert clock.due(5.0) is None
