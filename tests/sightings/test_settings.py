"""Settings of `stream-worker sightings`: defaults, its own env prefix, errors naming the flag."""

from __future__ import annotations

import pytest

from stream_worker.service.settings import ConfigError
from stream_worker.sightings.settings import SightingsSettings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


def test_defaults_read_plates_and_write_sightings_in_their_own_group():
    s = load_settings([])
    assert (s.input_topic, s.output_topic, s.group_id) == ("plates", "sightings", "stream-worker-sightings")
    assert s.metrics_port == 9109  # the worker has 9108: both may run on one host
    assert (s.gap_s, s.silence_s, s.max_group_s, s.max_edit_distance) == (1.5, 10.0, 30.0, 2)
    rules = s.grouping_rules()
    assert (rules.gap_s, rules.silence_s, rules.max_group_s, rules.motion_tolerance) == (1.5, 10.0, 30.0, 1.5)
    assert s.voting_rules().candidates == 5


def test_flags_and_their_prefixed_env_variables(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_SIGHTINGS_GAP_S", "2.5")
    monkeypatch.setenv("STREAM_WORKER_SIGHTINGS_GROUP_ID", "from-env")
    monkeypatch.setenv("STREAM_WORKER_GROUP_ID", "the-worker-s")  # not ours
    s = load_settings(["--group-id", "from-flag", "--min-reads", "3", "--direction-min-shift-widths", "2"])
    assert (s.gap_s, s.group_id, s.min_reads) == (2.5, "from-flag", 3)
    assert s.voting_rules().direction.min_shift_widths == 2.0
    flags = {"--" + name.replace("_", "-") for name in SightingsSettings.model_fields}
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        load_settings(["--help"])
    assert all(flag in out.getvalue() for flag in flags)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gap-s", "0"], "--gap-s / STREAM_WORKER_SIGHTINGS_GAP_S"),
        (["--gap-s", "40"], "--gap-s (40.0) must be below --max-group-s (30.0)"),
        (["--output-topic", "plates"], "two different topics"),
        (["--replay-lookback-s", "20"], "at least --max-group-s + --gap-s"),
        (["--kafka-config", "group.id=x"], "use --group-id instead"),
        (["--kafka-config", "acks=1"], "the sightings service needs its own value"),
    ],
)
def test_invalid_settings_say_what_to_fix(args, message):
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")
    ):
        load_settings(args)
