import pytest

from stream_worker.connector.shedding import MIN_FPS, RateGate, Shedding


def test_no_limit_while_the_delay_is_low():
    shedding = Shedding(10, 5)
    for second in range(20):
        assert shedding.update(0.5, float(second)) is None
    assert shedding.allowed_fps == 10


def test_an_unknown_delay_changes_nothing():
    shedding = Shedding(10, 5)
    shedding.update(4.0, 0.0)
    assert shedding.allowed_fps == 5
    for second in range(1, 10):
        assert shedding.update(None, float(second)) == 5


def test_above_half_the_bound_the_rate_is_halved():
    shedding = Shedding(10, 5)
    assert shedding.update(2.6, 0.0) == 5


def test_at_most_one_cut_a_second():
    shedding = Shedding(10, 5)
    shedding.update(3.0, 0.0)
    assert shedding.update(3.5, 0.5) == 5
    assert shedding.update(4.0, 1.0) == 2.5


def test_no_second_cut_while_the_delay_falls():
    shedding = Shedding(10, 5)
    shedding.update(4.0, 0.0)
    assert shedding.update(3.0, 1.5) == 5  # the first cut shows: no need for another
    assert shedding.update(3.0, 3.0) == 2.5  # no longer falling: cut again


def test_between_the_thresholds_the_rate_holds():
    shedding = Shedding(10, 5)
    shedding.update(3.0, 0.0)
    for second in range(1, 10):
        assert shedding.update(2.0, float(second)) == 5


def test_under_a_quarter_it_grows_back_by_half_a_frame_a_second_each_second():
    shedding = Shedding(10, 5)
    shedding.update(3.0, 0.0)
    assert shedding.update(1.0, 1.0) == pytest.approx(5.5)
    assert shedding.update(1.0, 2.0) == pytest.approx(6)
    for second in range(3, 10):
        shedding.update(1.0, float(second))
    assert shedding.update(1.0, 10.0) is None  # back to every frame, never above
    assert shedding.allowed_fps == 10


def test_a_late_update_grows_by_one_second_at_most():
    shedding = Shedding(10, 5)
    shedding.update(3.0, 0.0)
    assert shedding.update(0.0, 60.0) == pytest.approx(5.5)


def test_never_below_the_floor():
    shedding = Shedding(10, 5)
    for second in range(40):
        shedding.update(100.0 + second, float(second))
    assert shedding.allowed_fps == MIN_FPS


def test_a_camera_slower_than_the_floor_keeps_its_own_rate():
    shedding = Shedding(0.1, 5)
    for second in range(5):
        shedding.update(100.0 + second, float(second))
    assert shedding.limit is None


def test_zero_bound_never_sheds():
    shedding = Shedding(10, 0)
    assert shedding.update(1000.0, 0.0) is None
    assert shedding.update(2000.0, 5.0) is None


@pytest.mark.parametrize(("fps", "bound"), [(0, 5), (-1, 5), (float("nan"), 5), (10, -1), (10, float("inf"))])
def test_bad_settings_are_refused(fps, bound):
    with pytest.raises(ValueError):
        Shedding(fps, bound)


@pytest.mark.parametrize(("offered", "capacity"), [(25, 4), (10, 7), (10, 2.5), (5, 4.5)])
def test_a_queue_faster_than_its_worker_stays_under_the_bound(offered, capacity):
    """A camera offering more than the worker reads: the age of the frame read stays under the
    bound once the first overshoot is drained, and the rate published is most of the capacity."""
    bound = 5.0
    shedding = Shedding(offered, bound)
    gate = RateGate()
    dt = 1 / offered
    queue: list[float] = []  # capture times of the frames waiting
    read_credit = 0.0
    published = 0
    delays = []
    for n in range(int(300 * offered)):
        now = n * dt
        if gate.keep(now, shedding.limit):
            queue.append(now)
            published += 1
        read_credit += capacity * dt
        while read_credit >= 1 and queue:
            queue.pop(0)
            read_credit -= 1
        read_credit = min(read_credit, 1.0)
        if n % int(offered) == 0:  # once a second, as the connector asks the broker
            shedding.update(len(queue) / capacity, now)  # the wait of a frame published now
            if now > 30:
                delays.append(now - queue[0] if queue else 0.0)  # the wait of the frame read now
    assert max(delays) < bound
    assert published / 300 > 0.6 * capacity


def test_the_gate_keeps_every_frame_without_a_limit():
    gate = RateGate()
    assert all(gate.keep(i / 25, None) for i in range(50))


def test_the_gate_keeps_frames_evenly_at_the_allowed_rate():
    gate = RateGate()
    kept = [i / 25 for i in range(100) if gate.keep(i / 25, 5)]
    assert kept == pytest.approx([i / 5 for i in range(20)])


def test_the_gate_follows_a_changing_rate():
    gate = RateGate()
    first = sum(gate.keep(i / 10, 2) for i in range(100))
    second = sum(gate.keep(10 + i / 10, 5) for i in range(100))
    assert first == 20
    assert second == pytest.approx(50, abs=1)


@pytest.mark.parametrize(("offered", "capacity", "batch_s"), [(25, 3, 4.0), (25, 3, 2.0), (10, 6, 3.0)])
def test_a_worker_that_commits_a_batch_at_a_time_stays_under_the_bound(offered, capacity, batch_s):
    """The worker takes `batch_s` worth of frames at once and commits them when the batch is done:
    the wait is seen seconds late and in steps, and the rate still settles under the bound."""
    bound = 5.0
    shedding = Shedding(offered, bound)
    gate = RateGate()
    dt = 1 / offered
    queue: list[float] = []  # capture times of the frames not committed
    batch_end, batch = 0.0, 0
    pace: list[tuple[float, int]] = [(0.0, 0)]  # (time, frames committed)
    ages = []
    for n in range(int(400 * offered)):
        now = n * dt
        if gate.keep(now, shedding.limit):
            queue.append(now)
        if now >= batch_end:  # the batch is done: its frames are committed, the next one taken
            if batch:
                ages.append((now, now - queue[0]))
                del queue[:batch]
                pace.append((now, pace[-1][1] + batch))
            batch = min(len(queue), int(capacity * batch_s))
            batch_end = now + max(batch, 1) / capacity
        if n % offered == 0:
            recent = [p for p in pace if now - p[0] <= 5.0] or pace[-1:]
            rate = (pace[-1][1] - recent[0][1]) / (now - recent[0][0]) if now > recent[0][0] else 0
            wait = len(queue) / rate if rate > 0 else (now - queue[0] if queue else 0.0)
            shedding.update(wait if queue else 0.0, now)
    settled = [age for at, age in ages if at > 120]
    assert max(settled) < bound
