import pytest

from stream_worker.worker.lag import Lag


def test_the_lag_is_the_age_of_the_last_frame_taken():
    lag = Lag()
    lag.taken(97_500, 100.0, 10.0)
    assert lag.seconds(10.2, held_back=False) == pytest.approx(2.5)


def test_nothing_taken_for_a_second_is_no_lag():
    lag = Lag()
    assert lag.seconds(0.0, held_back=False) == 0.0
    lag.taken(90_000, 100.0, 10.0)
    assert lag.seconds(11.0, held_back=False) == 0.0


def test_holding_back_keeps_the_last_age():
    lag = Lag()
    lag.taken(90_000, 100.0, 10.0)
    assert lag.seconds(30.0, held_back=True) == pytest.approx(10.0)


def test_a_record_without_a_timestamp_keeps_the_last_age():
    lag = Lag()
    lag.taken(99_000, 100.0, 10.0)
    lag.taken(None, 101.0, 10.5)
    lag.taken(-1, 101.0, 10.6)
    assert lag.seconds(10.7, held_back=False) == pytest.approx(1.0)


def test_a_stamp_from_the_future_is_no_lag():
    lag = Lag()
    lag.taken(105_000, 100.0, 10.0)
    assert lag.seconds(10.1, held_back=False) == 0.0
