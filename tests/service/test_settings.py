"""The shared settings base: each service gets its own env prefix, names itself in errors, and keeps
the Kafka settings at-least-once depends on out of `kafka_config`."""

from __future__ import annotations

from typing import ClassVar

import pytest
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from stream_worker.service.kafka import consumer_config, producer_config
from stream_worker.service.settings import ConfigError, ServiceSettings, check_kafka_config, load


class DemoSettings(ServiceSettings):
    role: ClassVar[str] = "demo service"
    model_config = SettingsConfigDict(env_prefix="DEMO_SVC_", cli_prog_name="demo")

    group_id: str = Field("demo", min_length=1)
    metrics_port: int = Field(9999, ge=0, le=65535)


def test_a_service_reads_its_own_prefix_only(monkeypatch):
    monkeypatch.setenv("DEMO_SVC_BOOTSTRAP_SERVERS", "mine:1")
    monkeypatch.setenv("STREAM_WORKER_BOOTSTRAP_SERVERS", "the-worker-s:2")
    settings = load(DemoSettings, [])
    assert settings.bootstrap_servers == "mine:1"
    assert settings.metrics_port == 9999  # a subclass's own default
    assert load(DemoSettings, ["--bootstrap-servers", "flag:3"]).bootstrap_servers == "flag:3"


def test_errors_name_the_flag_the_prefixed_variable_and_the_service():
    with pytest.raises(ConfigError, match=r"--metrics-port / DEMO_SVC_METRICS_PORT"):
        load(DemoSettings, ["--metrics-port", "-1"])
    with pytest.raises(ConfigError, match="the demo service needs its own value"):
        load(DemoSettings, ["--kafka-config", "enable.auto.commit=true"])
    with pytest.raises(ConfigError, match=r"DEMO_SVC_KAFKA_CONFIG \[no.such.setting\]"):
        check_kafka_config(load(DemoSettings, ["--kafka-config", "no.such.setting=1"]))


def test_client_configs_keep_the_at_least_once_settings_whatever_kafka_config_says():
    settings = load(DemoSettings, ["--kafka-config", "linger.ms=50", "--kafka-config", "fetch.min.bytes=7"])
    consumer = consumer_config(settings, "g", **{"fetch.min.bytes": 1, "queued.max.messages.kbytes": 99})
    assert consumer["group.id"] == "g"
    assert (consumer["enable.auto.commit"], consumer["enable.auto.offset.store"]) == (False, False)
    assert consumer["fetch.min.bytes"] == "7"  # the user's setting over the service's default
    assert consumer["queued.max.messages.kbytes"] == 99
    producer = producer_config(settings)
    assert (producer["enable.idempotence"], producer["acks"]) == (True, "all")
    assert producer["linger.ms"] == "50"


def test_x_is_kafka_config_on_a_service_as_on_every_command():
    settings = load(
        DemoSettings, ["-X", "security.protocol=SSL", "-Xclient.id=a", "--kafka-config", "linger.ms=5"]
    )
    assert settings.kafka_config == {"security.protocol": "SSL", "client.id": "a", "linger.ms": "5"}
    with pytest.raises(ConfigError, match="use --group-id instead"):
        load(DemoSettings, ["-X", "group.id=x"])


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_a_services_help_has_the_layout_of_every_command(flag, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as stopped:
        load(DemoSettings, [flag])
    assert stopped.value.code == 0
    shown = capsys.readouterr().out
    assert shown.lstrip().startswith("Usage: demo [OPTIONS]")
    assert "╭─ Options ─" in shown
    kafka = shown.split("╭─ Kafka ─", 1)[1]
    for option in ("--bootstrap-servers", "--kafka-config", "-X", "--group-id", "--auto-offset-reset"):
        assert option in kafka, option
    assert "--metrics-port" in shown.split("╭─ Kafka ─", 1)[0]  # the service's own, above
    assert "[default: 9999]" in shown
    assert "usage:" not in shown  # argparse's layout
