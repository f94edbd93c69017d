"""Settings of `stream-worker notify`: defaults, its own env prefix, errors naming the flag, and
its README table."""

from __future__ import annotations

import os

import pytest

from stream_worker.notify.settings import NotifySettings, load_settings
from stream_worker.service.settings import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


def test_defaults():
    s = load_settings([])
    assert (s.input_topic, s.targets_topic, s.dlq_topic) == ("alerts", "notify-targets", "notify.dlq")
    assert (s.group_id, s.metrics_port, s.allow_private_targets) == ("stream-worker-notify", 9113, False)
    assert (s.visits_topic, s.visits_group_id) == ("visits", "stream-worker-notify-visits")
    assert (s.retry_budget_s, s.initial_backoff_s, s.max_backoff_s, s.max_pending) == (
        300.0,
        0.5,
        30.0,
        10_000,
    )


def test_flags_and_prefixed_env(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_NOTIFY_RETRY_BUDGET_S", "60")
    s = load_settings(["--allow-private-targets", "--dlq-topic", "dead"])
    assert (s.retry_budget_s, s.allow_private_targets, s.dlq_topic) == (60.0, True, "dead")
    assert NotifySettings.env_var("retry_budget_s") == "STREAM_WORKER_NOTIFY_RETRY_BUDGET_S"


@pytest.mark.parametrize(
    "args",
    [
        ["--dlq-topic", "alerts"],
        ["--targets-topic", "alerts"],
        ["--visits-topic", "sightings"],
        ["--visits-group-id", "stream-worker-notify"],
        ["--initial-backoff-s", "10", "--max-backoff-s", "5"],
        ["--retry-budget-s", "0"],
        ["--max-pending", "0"],
        ["--ca-file", "/no/such/ca.pem"],
    ],
)
def test_bad_settings_name_the_flag(args):
    with pytest.raises(ConfigError, match="invalid settings"):
        load_settings(args)
