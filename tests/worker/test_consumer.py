"""The consumer wrapper's pure parts: its librdkafka settings and the lag it reads from statistics."""

from __future__ import annotations

import orjson

from stream_worker.config import load_settings
from stream_worker.worker.consumer import consumer_config, lag_from_statistics


def test_lag_comes_from_librdkafka_statistics_for_real_partitions_only():
    statistics = {
        "topics": {
            "frames": {
                "partitions": {
                    "0": {"consumer_lag": 12},
                    "1": {"consumer_lag": 0},
                    "2": {"consumer_lag": -1},  # unknown yet
                    "-1": {"consumer_lag": 5},  # librdkafka's internal unassigned partition
                }
            }
        }
    }
    assert lag_from_statistics(orjson.dumps(statistics).decode()) == {("frames", 0): 12, ("frames", 1): 0}
    assert lag_from_statistics("{}") == {}


def test_commits_are_manual_and_the_worker_s_own_settings_win():
    settings = load_settings(["--kafka-config", "queued.max.messages.kbytes=2048", "--group-id", "g"])
    config = consumer_config(settings)
    assert config["enable.auto.commit"] is False
    assert config["enable.auto.offset.store"] is False
    assert config["group.id"] == "g"
    assert config["queued.max.messages.kbytes"] == "2048"  # a user setting overrides the default
