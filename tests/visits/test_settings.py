"""Settings of `stream-worker visits` and its commit book: defaults, its own env prefix, errors naming
the flag; positions never committed past a held exit."""

from __future__ import annotations

import pytest
from store_records import T0, plate_sighting

from stream_worker.contracts.cameras import SiteRole
from stream_worker.service.settings import ConfigError
from stream_worker.visits.app import HeldExit, Positions
from stream_worker.visits.pairing import SiteCamera
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
    positions = Positions()
    positions.done(0, 10)
    positions.done(1, 7)
    camera = SiteCamera("depot", SiteRole.EXIT)
    positions.held.append(HeldExit(0, 4, plate_sighting("x", "B840CK197", T0), camera, until=0.0))
    assert positions.committable() == {0: 4, 1: 7}
    positions.mark_committed({0: 4, 1: 7})
    assert positions.committable() == {}
    positions.held.clear()
    assert positions.committable() == {0: 10}
    positions.drop(0)
    assert positions.committable() == {}
