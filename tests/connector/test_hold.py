import pytest

from stream_worker.cameras.motion import Decision, PreRoll
from stream_worker.connector.hold import StaticHold

M, P, H, S = Decision.MOTION, Decision.POST_ROLL, Decision.HEARTBEAT, Decision.STATIC


def feed(hold: StaticHold[float], decisions: list[tuple[float, Decision]]) -> list[tuple[float, bool]]:
    out: list[tuple[float, bool]] = []
    for t, decision in decisions:
        out += hold.admit(t, t, decision)
    return out + hold.clear()


def test_every_frame_comes_out_once_in_order_examined_as_pre_roll_would():
    stream = [
        (0.0, H),
        (0.5, S),
        (1.0, S),
        (1.5, S),
        (2.0, S),
        (2.5, M),
        (3.0, P),
        (3.5, S),
        (4.0, S),
        (4.5, H),
    ]
    out = feed(StaticHold(1.0, 64), stream)
    assert [t for t, _ in out] == [t for t, _ in stream]
    examined = [t for t, is_examined in out if is_examined]
    assert examined == [0.0, 1.5, 2.0, 2.5, 3.0, 4.5]  # 1 s of pre-roll before the motion
    # The same frames as motion.PreRoll publishes.
    ring: PreRoll[float] = PreRoll(1.0, 64)
    assert [x for t, d in stream for x in ring.admit(t, t, d)] == examined


def test_a_full_ring_lets_its_oldest_go_as_static():
    out = feed(StaticHold(10.0, 2), [(0.0, S), (0.1, S), (0.2, S), (0.3, M)])
    assert out == [(0.0, False), (0.1, True), (0.2, True), (0.3, True)]


def test_no_pre_roll_makes_each_static_frame_static_at_once():
    hold: StaticHold[float] = StaticHold(0.0, 0)
    assert hold.admit(1.0, 1.0, S) == [(1.0, False)] and len(hold) == 0


def test_time_going_backwards_lets_the_held_frames_go_first():
    hold: StaticHold[float] = StaticHold(1.0, 64)
    hold.admit(5.0, 5.0, S)
    assert hold.admit(0.0, 0.0, M) == [(5.0, False), (0.0, True)]


def test_negative_sizes_are_refused():
    with pytest.raises(ValueError):
        StaticHold(-1.0, 4)
