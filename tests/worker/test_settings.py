"""Worker settings: defaults, flags, env variables, and errors that name the setting at fault."""

from __future__ import annotations

import pytest

from stream_worker.service.settings import ConfigError, check_kafka_config
from stream_worker.worker.settings import WorkerSettings, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


def test_defaults_match_the_documented_contract():
    s = load_settings([])
    assert (s.bootstrap_servers, s.triton_url) == ("localhost:9092", "localhost:8001")
    assert s.group_id == "stream-worker"
    assert (s.input_topic, s.output_topic, s.dlq_topic) == ("frames", "plates", "frames.dlq")
    assert (s.max_batch_frames, s.max_batch_wait_ms, s.max_inflight_batches) == (16, 25, 4)
    assert s.metrics_port == 9108
    assert s.skip_empty is False
    assert s.kafka_config == {}


def test_every_field_is_a_flag():
    args = {
        "bootstrap-servers": "b:1",
        "triton-url": "t:2",
        "group-id": "g",
        "input-topic": "in",
        "output-topic": "out",
        "dlq-topic": "dead",
        "max-batch-frames": "8",
        "max-batch-wait-ms": "5",
        "max-inflight-batches": "2",
        "metrics-port": "0",
        "max-frame-bytes": "1000",
        "shutdown-timeout-s": "7.5",
        "inference-attempts": "5",
    }
    cli = [part for name, value in args.items() for part in (f"--{name}", value)]
    s = load_settings([*cli, "--skip-empty", "--kafka-config", "a.b=1", "--kafka-config", "c.d=x"])
    assert (s.bootstrap_servers, s.triton_url, s.group_id) == ("b:1", "t:2", "g")
    assert (s.input_topic, s.output_topic, s.dlq_topic) == ("in", "out", "dead")
    assert (s.max_batch_frames, s.max_batch_wait_ms, s.max_inflight_batches, s.metrics_port) == (8, 5, 2, 0)
    assert (s.max_frame_bytes, s.shutdown_timeout_s, s.inference_attempts) == (1000, 7.5, 5)
    assert s.skip_empty is True
    assert s.kafka_config == {"a.b": "1", "c.d": "x"}
    flags = {"--" + name.replace("_", "-") for name in WorkerSettings.model_fields}
    help_text = _help()
    assert all(flag in help_text for flag in flags)


def _help() -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        load_settings(["--help"])
    return out.getvalue()


def test_env_variables_with_prefix_and_flags_win(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_MAX_BATCH_FRAMES", "32")
    monkeypatch.setenv("STREAM_WORKER_GROUP_ID", "from-env")
    kafka_json = '{"security.protocol": "sasl_ssl", "socket.timeout.ms": 5000}'
    monkeypatch.setenv("STREAM_WORKER_KAFKA_CONFIG", kafka_json)
    s = load_settings(["--group-id", "from-flag"])
    assert s.max_batch_frames == 32
    assert s.group_id == "from-flag"
    assert s.kafka_config == {"security.protocol": "sasl_ssl", "socket.timeout.ms": "5000"}


def test_booleans_in_kafka_config_become_librdkafka_strings(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_KAFKA_CONFIG", '{"enable.ssl.certificate.verification": false}')
    assert load_settings([]).kafka_config == {"enable.ssl.certificate.verification": "false"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-batch-frames", "0"], "--max-batch-frames / STREAM_WORKER_MAX_BATCH_FRAMES: Input should be"),
        (["--max-inflight-batches", "x"], "--max-inflight-batches / STREAM_WORKER_MAX_INFLIGHT_BATCHES"),
        (["--metrics-port", "70000"], "--metrics-port / STREAM_WORKER_METRICS_PORT"),
        (["--max-batch-wait-ms", "-1"], "--max-batch-wait-ms"),
        (["--bootstrap-servers", ""], "--bootstrap-servers"),
        (["--auto-offset-reset", "middle"], "--auto-offset-reset"),
        (["--kafka-config", "group.id=x"], "'group.id' cannot be set here: use --group-id instead"),
        (["--kafka-config", "enable.auto.commit=true"], "'enable.auto.commit' cannot be set here"),
        (["--kafka-config", "acks=1"], "'acks' cannot be set here: the worker needs its own value"),
        (["--retry-initial-backoff-s", "2", "--retry-max-backoff-s", "1"], "--retry-max-backoff-s (1.0) is"),
        (["--max-pending-frames", "4"], "--max-pending-frames (4) must be at least --max-batch-frames (16)"),
        (["--output-topic", "frames"], "four different topics"),
        (["--no-such-flag", "1"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_invalid_settings_name_the_flag_and_env_variable(args, message):
    with pytest.raises(ConfigError) as caught:
        load_settings(args)
    assert message in str(caught.value)


def test_invalid_env_values_are_reported_too(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_MAX_BATCH_FRAMES", "lots")
    with pytest.raises(ConfigError, match="--max-batch-frames / STREAM_WORKER_MAX_BATCH_FRAMES"):
        load_settings([])


def test_kafka_config_errors_never_echo_secrets():
    with pytest.raises(ConfigError) as caught:
        load_settings(["--kafka-config", "sasl.password=hunter2", "--kafka-config", "group.id=x"])
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["no.such.property=1"], '[no.such.property]: No such configuration property: "no.such.property"'),
        (["security.protocol=carrier-pigeon"], "[security.protocol]: Invalid value"),
        (["socket.timeout.ms=soon"], "[socket.timeout.ms]: Invalid value"),
        (["security.protocol=sasl_ssl", "sasl.mechanism=PLAIN"], "sasl.username and sasl.password must"),
    ],
)
def test_librdkafka_judges_kafka_config_at_start(pairs, message):
    settings = load_settings([part for pair in pairs for part in ("--kafka-config", pair)])
    with pytest.raises(ConfigError) as caught:
        check_kafka_config(settings)
    assert "--kafka-config / STREAM_WORKER_KAFKA_CONFIG" in str(caught.value)
    assert message in str(caught.value)


def test_a_complete_sasl_tls_config_passes():
    pairs = [
        "security.protocol=sasl_ssl",
        "sasl.mechanism=SCRAM-SHA-512",
        "sasl.username=worker",
        "sasl.password=secret",
        "ssl.endpoint.identification.algorithm=https",
    ]
    settings = load_settings([part for pair in pairs for part in ("--kafka-config", pair)])
    check_kafka_config(settings)
    assert settings.redacted_kafka_config()["sasl.password"] == "***"
    assert settings.redacted_kafka_config()["sasl.username"] == "worker"
