"""The worker's HTTP endpoints: /metrics in Prometheus format, /healthz and /readyz probes."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from stream_worker.launchers.ports import free_port
from stream_worker.service.http import HealthServer, read_metric
from stream_worker.worker.metrics import Metrics, read_frames_in


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture
def served():
    state = {"ready": (False, "no partitions assigned"), "age": 0.5}
    metrics = Metrics()
    server = HealthServer(metrics, "127.0.0.1", 0, lambda: state["ready"], lambda: state["age"])
    server.start()
    yield metrics, server.port, state
    server.stop()


def test_metrics_are_served_in_prometheus_format(served):
    metrics, port, _ = served
    metrics.frames_in.inc(3)
    metrics.dead_letters.labels("invalid_image").inc()
    metrics.batch_size.observe(16)
    metrics.consumer_lag.labels("frames", "2").set(42)
    status, body = get(port, "/metrics")
    assert status == 200
    assert "stream_worker_frames_in_total 3.0" in body
    assert 'stream_worker_dead_letters_total{reason="invalid_image"} 1.0' in body
    assert 'stream_worker_batch_frames_bucket{le="16.0"} 1.0' in body
    assert 'stream_worker_consumer_lag{partition="2",topic="frames"} 42.0' in body
    for name in (
        "stream_worker_events_out_total",
        "stream_worker_batch_latency_seconds",
        "stream_worker_inflight_batches",
        "stream_worker_triton_errors",
    ):
        assert name in body


def test_readyz_follows_the_readiness_check(served):
    _, port, state = served
    assert get(port, "/readyz") == (503, "not ready: no partitions assigned\n")
    state["ready"] = (True, "3 partitions assigned, Triton ready")
    assert get(port, "/readyz") == (200, "ready: 3 partitions assigned, Triton ready\n")


def test_healthz_fails_when_the_main_loop_is_stuck(served):
    _, port, state = served
    assert get(port, "/healthz")[0] == 200
    state["age"] = 120.0
    status, body = get(port, "/healthz")
    assert status == 503 and "stuck" in body


def test_unknown_paths_are_404(served):
    assert get(served[1], "/nope")[0] == 404


def test_read_frames_in_reads_the_counter_back(served):
    metrics, port, _ = served
    url = f"http://127.0.0.1:{port}/metrics"
    assert read_frames_in(url) == 0
    metrics.frames_in.inc(239)
    assert read_frames_in(url) == 239


def test_read_frames_in_is_none_without_a_worker():
    assert read_frames_in(f"http://127.0.0.1:{free_port()}/metrics", timeout_s=2) is None


def test_read_metric_reads_one_unlabelled_sample_and_never_a_longer_name(served):
    metrics, port, _ = served
    url = f"http://127.0.0.1:{port}/metrics"
    metrics.pending_frames.set(7)
    metrics.consumer_lag.labels("frames", "0").set(99)
    assert read_metric(url, "stream_worker_pending_frames") == 7.0
    assert read_metric(url, "stream_worker_consumer_lag") is None  # labelled only
    assert read_metric(url, "stream_worker_pending") is None  # a prefix of another name


def test_a_server_never_started_stops_at_once_and_frees_its_port():
    server = HealthServer(Metrics(), "127.0.0.1", 0, lambda: (True, "ok"), lambda: 0.0)
    port = server.port
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(timeout=5)
    assert not stopper.is_alive(), "stop() waited for a serving loop that never ran"
    again = HealthServer(Metrics(), "127.0.0.1", port, lambda: (True, "ok"), lambda: 0.0)
    again.stop()
