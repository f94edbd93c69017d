"""ServiceChild: a real `stream-worker sightings` child, started, ready, stopped; and one that
exits at once, reported by wait_ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.service_child import ServiceChild, ServiceStartError


def sightings_args(bootstrap: str, name: str, *extra: str) -> list[str]:
    return [
        "--bootstrap-servers", bootstrap,
        "--group-id", f"{name}-group",
        "--input-topic", f"{name}.plates",
        "--output-topic", f"{name}.sightings",
        "--session-timeout-ms", "6000",
        "--metrics-host", "127.0.0.1",
        *extra,
    ]  # fmt: skip


def test_a_service_starts_becomes_ready_and_stops_with_exit_0(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str
) -> None:
    create_topics(kafka_bootstrap, [f"{unique_name}.plates", f"{unique_name}.sightings"], partitions=1)
    args = sightings_args(kafka_bootstrap, unique_name, "--metrics-port", "0")
    service = ServiceChild("sightings", args, tmp_path / "sightings.log").start()
    try:
        service.wait_ready(timeout_s=180)
        assert service.is_running()
        assert service.metrics_port is not None and service.metrics_port > 0  # read from the start line
        assert service.returncode is None
    finally:
        code = service.stop(timeout_s=60)
    assert code == 0, service.log_tail()
    assert not service.is_running()
    assert "sightings started" in service.log_tail()


def test_a_service_that_exits_at_once_is_reported_by_wait_ready(tmp_path: Path) -> None:
    args = sightings_args("127.0.0.1:1", "bad", "--silence-s", "-1")
    service = ServiceChild("sightings", args, tmp_path / "sightings.log", metrics_port=1).start()
    with pytest.raises(ServiceStartError, match="sightings exited with 2 during start-up") as error:
        service.wait_ready(timeout_s=60)
    assert error.value.exit_code == 2
    assert "--silence-s" in str(error.value)  # the log's end says why
    assert service.stop() == 2


def test_stop_before_start_is_none(tmp_path: Path) -> None:
    assert ServiceChild("sightings", [], tmp_path / "x.log").stop() is None


def test_said_is_what_the_last_start_printed_beside_its_json_log(tmp_path: Path) -> None:
    log_path = tmp_path / "sightings.log"
    log_path.write_text("an earlier run said this\n")
    args = sightings_args("127.0.0.1:1", "bad", "--silence-s", "-1")
    service = ServiceChild("sightings", args, log_path, metrics_port=1, append_log=True).start()
    assert service.process is not None and service.process.wait(60) == 2
    said = service.said()
    assert said and any("--silence-s" in line for line in said)  # its settings error, plain text
    assert "an earlier run said this" not in said and not any(line.startswith("{") for line in said)
    assert log_path.read_text().startswith("an earlier run said this\n")
