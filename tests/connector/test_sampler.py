import pytest

from stream_worker.connector.sampler import FpsSampler, StreamTime


def kept(sampler: FpsSampler, times: list[float]) -> list[float]:
    return [t for t in times if sampler.keep(t)]


def test_25_fps_sampled_to_5_keeps_every_fifth_frame():
    times = [i / 25 for i in range(50)]
    assert kept(FpsSampler(5), times) == pytest.approx([i / 5 for i in range(10)])


def test_a_stream_slower_than_fps_keeps_every_frame():
    times = [i / 4 for i in range(12)]  # the gate clips: 4 fps
    assert kept(FpsSampler(5), times) == times


def test_uneven_timestamps_keep_one_frame_per_slot():
    times = [0.0, 0.07, 0.17, 0.21, 0.33, 0.39, 0.41, 0.55, 0.61]
    assert kept(FpsSampler(5), times) == [0.0, 0.21, 0.39, 0.61]  # a tenth of a slot early counts


def test_a_stream_a_hair_faster_than_fps_keeps_every_frame():
    times = [n * 1000 / 30000 * 0.99998 for n in range(300)]  # 30.0006 fps in a 1/30000 time base
    assert len(kept(FpsSampler(30), times)) == 300


def test_a_gap_is_not_made_up_with_a_burst():
    times = [0.0, 0.2, 0.4, 3.05, 3.1, 3.15, 3.2, 3.25, 3.3]
    assert kept(FpsSampler(5), times) == [0.0, 0.2, 0.4, 3.05, 3.2]


def test_time_going_backwards_starts_again_and_says_so():
    sampler = FpsSampler(5)
    assert kept(sampler, [10.0, 10.1, 10.2]) == [10.0, 10.2]
    assert sampler.keep(0.0) and sampler.restarted  # the file looped
    assert not sampler.keep(0.1) and not sampler.restarted
    assert sampler.keep(0.2)


def test_repeated_timestamps_are_not_a_restart():
    sampler = FpsSampler(5)
    assert sampler.keep(1.0)
    assert not sampler.keep(1.0) and not sampler.restarted


def test_slots_of_a_coarse_time_base_are_not_missed():
    # 1/3 s slots of 1/600 s ticks: 200 ticks land exactly, 0.3333... does not
    times = [n * 50 / 600 for n in range(25)]  # 12 fps
    assert len(kept(FpsSampler(3), times)) == 7  # 0, 1/3, ... 2 s: none missed


@pytest.mark.parametrize("fps", [0, -1, float("inf"), float("nan")])
def test_fps_must_be_a_positive_number(fps):
    with pytest.raises(ValueError):
        FpsSampler(fps)


def test_missing_pts_follow_the_last_frame_by_one_frame_duration():
    times = StreamTime(0.04)
    assert times.of(None, None) == 0.0
    assert times.of(1000, 1 / 1000) == 1.0
    assert times.of(None, 1 / 1000) == pytest.approx(1.04)
    assert times.of(None, 1 / 1000) == pytest.approx(1.08)
    times.reset()
    assert times.of(None, None) == 0.0
