"""Settings of `stream-worker visits` and its commit book: defaults, its own env prefix, errors naming
the flag; positions never committed past a held exit."""

from __future__ import annotations

import pytest

from stream_worker.service.offsets import OffsetBook
from stream_worker.service.settings import ConfigError
from stream_worker.visits.settings import VisitsSettings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


def test_defaults():
    s = load_settings([])
    assert (s.input_topic, s.output_topic, s.cameras_topic) == ("sightings", "visits", "cameras")
    assert (s.group_id, s.metrics_port) == ("stream-worker-visits", 9114)
    assert (s.max_distance, s.overstay_s, s.overstay_grace_s, s.exit_wait_s) == (1.0, 0.0, 60.0, 30.0)


def test_flags_and_prefixed_env(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_VISITS_OVERSTAY_S", "7200")
    s = load_settings(["--max-distance", "0.5"])
    assert (s.overstay_s, s.max_distance) == (7200.0, 0.5)
    assert VisitsSettings.env_var("overstay_s") == "STREAM_WORKER_VISITS_OVERSTAY_S"


def test_list_limits_from_json_by_flag_or_env(monkeypatch):
    assert load_settings([]).list_overstay_s == {}
    assert load_settings(["--list-overstay-s", '{"deliveries": 1800, "residents": 0}']).list_overstay_s == {
        "deliveries": 1800.0,
        "residents": 0.0,
    }
    monkeypatch.setenv("STREAM_WORKER_VISITS_LIST_OVERSTAY_S", '{"staff": 60}')
    assert load_settings([]).list_overstay_s == {"staff": 60.0}
    assert load_settings([]).watchlist_topic == "watchlist"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--max-distance", "-1"], "--max-distance"),
        (["--overstay-s", "-5"], "--overstay-s"),
        (["--output-topic", "sightings"], "settings"),
        (["--cameras-topic", "visits"], "settings"),
        (["--watchlist-topic", "cameras"], "settings"),
        (["--list-overstay-s", '{"Not A List": 60}'], "--list-overstay-s"),
        (["--list-overstay-s", '{"deliveries": -1}'], "--list-overstay-s"),
    ],
)
def test_bad_settings_name_the_flag(args, flag):
    with pytest.raises(ConfigError) as caught:
        load_settings(args)
    assert flag in str(caught.value)


def test_positions_stop_below_the_first_held_exit_and_are_offered_once():
    """The offset book as the service keeps it: a chunk's offsets held until its events are
    acknowledged, a held exit's offset until it is decided."""
    book = OffsetBook()
    p0, p1 = ("sightings", 0), ("sightings", 1)
    book.assign(p0)
    book.assign(p1)
    for partition, offsets in ((p0, range(10)), (p1, range(7))):
        for offset in offsets:
            book.consumed(partition, offset, holds=1)
    book.hold(p0, 4)  # an exit waiting for its entry
    assert book.committable() == {p0: 0, p1: 0}  # nothing acknowledged yet
    for partition, offsets in ((p0, range(10)), (p1, range(7))):
        for offset in offsets:
            book.release(partition, offset)
    assert book.committable() == {p0: 4, p1: 7}
    book.mark_committed({p0: 4, p1: 7})
    assert book.committable() == {}
    book.release(p0, 4)  # the exit decided, its events acknowledged
    assert book.committable() == {p0: 10}
    book.forget(p0)
    assert book.committable() == {}
