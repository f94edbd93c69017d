import pytest

from stream_worker.connector.settings import load_settings
from stream_worker.service.settings import ConfigError


def test_defaults_then_env_then_flags(monkeypatch):
    monkeypatch.setenv("STREAM_WORKER_CONNECT_QUEUE_FRAMES", "50")
    monkeypatch.setenv("STREAM_WORKER_CONNECT_STALL_TIMEOUT_S", "9")
    settings = load_settings(["--stall-timeout-s", "3", "--replica-id", "pod-1"])
    assert (settings.queue_frames, settings.stall_timeout_s, settings.replica_id) == (50, 3.0, "pod-1")
    assert (settings.frames_topic, settings.cameras_topic, settings.status_topic) == (
        "frames",
        "cameras",
        "camera-status",
    )
    assert settings.metrics_port == 9111 and settings.group_id == "stream-worker-connector"
    assert settings.backoff_cap_s <= 8  # a camera back is read again within 10 s
    assert settings.session_timeout_ms == 10000  # a dead replica's cameras move within seconds


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--frames-topic", "cameras"], "three topics"),
        (["--backoff-base-s", "10", "--backoff-cap-s", "5"], "--backoff-base-s"),
        (["--queue-frames", "0"], "--queue-frames / STREAM_WORKER_CONNECT_QUEUE_FRAMES"),
        (["--kafka-config", "group.id=x"], "--group-id"),
    ],
)
def test_bad_settings_are_named(args, named):
    with pytest.raises(ConfigError, match=named):
        load_settings(args)
