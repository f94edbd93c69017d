"""Settings of `stream-worker alerts`: defaults, its own env prefix, errors naming the flag."""

from __future__ import annotations

import pytest

from stream_worker.alerts.settings import AlertsSettings, load_settings
from stream_worker.service.settings import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


def test_defaults():
    s = load_settings([])
    assert (s.input_topic, s.output_topic, s.watchlist_topic) == ("plates", "alerts", "watchlist")
    assert (s.group_id, s.metrics_port) == ("stream-worker-alerts", 9110)
    assert (s.default_max_distance, s.min_confidence, s.pass_gap_s) == (1.0, 0.5, 3.0)
    assert (s.sightings_topic, s.sightings_group_id) == ("sightings", "stream-worker-alerts-sightings")
    assert (s.sighting_candidates, s.recent_passes, s.recent_pass_age_s) == (3, 10_000, 900.0)


def test_flags_and_prefixed_env(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_ALERTS_PASS_GAP_S", "5")
    s = load_settings(["--min-confidence", "0.7", "--watchlist-topic", "wl"])
    assert (s.pass_gap_s, s.min_confidence, s.watchlist_topic) == (5.0, 0.7, "wl")
    assert AlertsSettings.env_var("pass_gap_s") == "STREAM_WORKER_ALERTS_PASS_GAP_S"


@pytest.mark.parametrize(
    "args",
    [
        ["--min-confidence", "1.5"],
        ["--output-topic", "plates"],
        ["--pass-gap-s", "90"],
        ["--pass-gap-s", "0"],
        ["--sightings-topic", "plates"],
        ["--sightings-topic", "watchlist"],
        ["--sightings-group-id", "stream-worker-alerts"],
        ["--sighting-candidates", "0"],
        ["--recent-passes", "0"],
        ["--recent-pass-age-s", "60"],
    ],
)
def test_bad_settings_name_the_flag(args):
    with pytest.raises(ConfigError, match="invalid settings"):
        load_settings(args)
