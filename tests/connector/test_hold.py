import pytest

from stream_worker.cameras.motion import Decision
from stream_worker.connector.hold import MarkerThinner, StaticHold

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


def test_held_frames_unchanged_from_the_background_are_no_pre_roll():
    hold: StaticHold[float] = StaticHold(1.0, 64)
    out: list[tuple[float, bool]] = []
    for t, unchanged in [(0.0, True), (0.25, False), (0.5, True), (0.75, False)]:
        out += hold.admit(t, t, S, unchanged)
    out += hold.admit(1.0, 1.0, M)
    assert out == [(0.0, False), (0.25, True), (0.5, False), (0.75, True), (1.0, True)]
    # a heartbeat or post-roll releases nothing as pre-roll, unchanged or not
    hold.admit(1.25, 1.25, S, False)
    assert hold.admit(1.5, 1.5, P) == [(1.25, False), (1.5, True)]
    # only motion frames' own flag never matters: the frame that moved is examined
    assert hold.admit(1.75, 1.75, M, True) == [(1.75, True)]


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


# MarkerThinner


def thin(thinner: MarkerThinner[float], out: list[tuple[float, bool]]) -> list[tuple[float, bool]]:
    kept = [x for t, examined in out for x in thinner.take(t, t, examined)]
    return kept + thinner.flush()


def test_one_marker_a_second_and_the_last_static_frame_before_an_examined_one():
    # 10 frames/s: a heartbeat, 3.3 s static, motion at 3.4 s, static again to 5.0 s
    stream = [(round(0.1 * i, 1), i == 0 or 34 <= i <= 36) for i in range(51)]
    out = thin(MarkerThinner(1.0), stream)
    assert [t for t, _ in out] == sorted(t for t, _ in out)  # in order, each at most once
    assert [t for t, examined in out if examined] == [0.0, 3.4, 3.5, 3.6]  # every examined frame
    markers = [t for t, examined in out if not examined]
    assert markers == [1.0, 2.0, 3.0, 3.3, 4.6, 5.0]  # a second apart; 3.3 before the motion; 5.0 at the end


def test_interval_zero_keeps_every_marker():
    stream = [(0.1 * i, i % 7 == 0) for i in range(30)]
    assert thin(MarkerThinner(0.0), stream) == stream


def test_thinned_after_the_hold_the_examined_frames_are_the_same():
    stream = [(0.0, H)] + [(0.1 * i, S) for i in range(1, 40)] + [(4.0, M), (4.1, P), (4.2, P)]
    stream += [(4.2 + 0.1 * i, S) for i in range(1, 120)] + [(16.2, H)]
    held = feed(StaticHold(1.0, 64), stream)
    out = thin(MarkerThinner(1.0), held)
    assert [t for t, e in out if e] == [t for t, e in held if e]
    assert len([1 for _, e in out if not e]) < len([1 for _, e in held if not e]) / 5


def test_time_going_backwards_lets_the_marker_through():
    thinner: MarkerThinner[float] = MarkerThinner(1.0)
    assert thinner.take(5.0, 5.0, False) == [(5.0, False)]
    assert thinner.take(5.5, 5.5, False) == []
    assert thinner.take(1.0, 1.0, False) == [(1.0, False)]
    assert thinner.flush() == []


def test_a_negative_interval_is_refused():
    with pytest.raises(ValueError):
        MarkerThinner(-0.5)
