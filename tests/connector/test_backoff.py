import pytest

from stream_worker.connector.backoff import backoff_s


def test_doubles_from_the_base_up_to_the_cap():
    ceilings = [backoff_s(n, 0.5, 8.0, rand=lambda: 0.999999) for n in range(8)]
    assert ceilings == pytest.approx([0.5, 1, 2, 4, 8, 8, 8, 8], rel=1e-5)


def test_jitter_keeps_at_least_half_the_delay():
    assert backoff_s(3, 0.5, 8.0, rand=lambda: 0.0) == 2.0
    assert backoff_s(3, 0.5, 8.0, rand=lambda: 0.5) == 3.0


def test_draws_spread_between_half_and_the_whole():
    draws = {round(backoff_s(10, 1.0, 10.0), 3) for _ in range(200)}
    assert min(draws) >= 5.0 and max(draws) <= 10.0 and len(draws) > 50


def test_huge_attempts_stay_capped():
    assert backoff_s(10_000, 0.5, 8.0, rand=lambda: 0.0) == 4.0


def test_negative_inputs_are_refused():
    with pytest.raises(ValueError):
        backoff_s(-1, 0.5, 8.0)
