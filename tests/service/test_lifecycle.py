"""The skeleton every consuming service shares (service/lifecycle.LoopService): how it stops, what a
fatal Kafka error does, the one shutdown sequence (groups left softly, the rest closed, one line
saying what is left), the one policy for a record the broker refuses, and the status timing."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from stream_worker.service import lifecycle
from stream_worker.service.lifecycle import LoopService
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.settings import ServiceSettings


class RecordingConsumer:
    def __init__(self, close_error: bool = False) -> None:
        self.close_error = close_error
        self.closed = False

    def close(self) -> None:
        self.closed = True
        if self.close_error:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))


class CountingService(LoopService):
    """Turns until `stop_after` turns (then asks itself to stop), or raises `error` on that turn."""

    log = logging.getLogger("test.lifecycle")
    started_message = "test service started"

    def __init__(
        self, consumer: RecordingConsumer, stop_after: int, error: BaseException | None = None
    ) -> None:
        self.metrics = ServiceMetrics("test")
        super().__init__(ServiceSettings(metrics_host="127.0.0.1", metrics_port=0), self.metrics)
        self.consumer = consumer
        self.turns, self.stop_after, self.error = 0, stop_after, error
        self.shutdowns = 0

    def _started_fields(self) -> dict[str, Any]:
        return {"what": "a test"}

    def _turn(self) -> None:
        self.turns += 1
        if self.turns == self.stop_after:
            if self.error is not None:
                raise self.error
            self.request_stop()

    def _readiness(self) -> tuple[bool, str]:
        return True, "ok"

    def _finish(self) -> dict[str, int]:
        self.shutdowns += 1
        return {"turns": self.turns}


def test_a_stop_request_ends_the_loop_after_its_turn_and_shuts_down_once(caplog) -> None:
    service = CountingService(RecordingConsumer(), stop_after=3)
    with caplog.at_level(logging.INFO, "test.lifecycle"):
        assert service.run() == 0
    assert (service.turns, service.shutdowns, service.consumer.closed) == (3, 1, True)
    started = [r for r in caplog.records if r.getMessage() == "test service started"]
    assert started and started[0].what == "a test" and started[0].metrics_port > 0


def test_a_second_stop_request_keeps_the_first_time() -> None:
    service = CountingService(RecordingConsumer(), stop_after=1)
    service.request_stop()
    first = service.stop_requested_at
    service.request_stop()
    assert first is not None and service.stop_requested_at == first
    assert service.deadlines.stop_requested_at == first  # the shutdown's budget starts there
    service.http.stop()


def test_a_fatal_kafka_error_stops_the_loop_and_the_shutdown_reports_it(caplog) -> None:
    error = KafkaException(KafkaError(KafkaError._FATAL))
    service = CountingService(RecordingConsumer(), stop_after=2, error=error)
    with caplog.at_level(logging.ERROR, "test.lifecycle"):
        assert service.run() == 1
    assert service.fatal is error and service.shutdowns == 1
    assert any("fatal Kafka error" in r.getMessage() for r in caplog.records)


def test_any_other_error_is_not_swallowed() -> None:
    service = CountingService(RecordingConsumer(), stop_after=1, error=ValueError("a bug"))
    with pytest.raises(ValueError, match="a bug"):
        service.run()
    service.http.stop()


def test_a_failed_group_leave_is_logged_not_raised(caplog) -> None:
    service = CountingService(RecordingConsumer(close_error=True), stop_after=1)
    with caplog.at_level(logging.WARNING, "test.lifecycle"):
        assert service.run() == 0
    assert any(r.getMessage() == "could not leave the group cleanly" for r in caplog.records)


def test_status_is_due_once_per_period(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: now[0])
    service = CountingService(RecordingConsumer(), stop_after=1)
    assert not service._status_due()
    now[0] += lifecycle.STATUS_LOG_EVERY_S
    assert service._status_due()
    assert not service._status_due()  # the period starts again
    now[0] += lifecycle.STATUS_LOG_EVERY_S - 0.1
    assert not service._status_due()
    now[0] += 0.1
    assert service._status_due()
    service.http.stop()


class StatusService(CountingService):
    """Names two of its settings on the start line and says its turns on the status line."""

    started_settings = ("metrics_host", "shutdown_timeout_s")
    _started_fields = LoopService._started_fields

    def _status(self) -> dict[str, Any]:
        return {"turns": self.turns}


def test_the_start_line_names_the_started_settings_and_the_status_line_says_status(
    caplog, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [1000.0]
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: now[0])
    service = StatusService(RecordingConsumer(), stop_after=2)
    with caplog.at_level(logging.INFO, "test.lifecycle"):
        assert service.run() == 0
        service._log_status()  # not due yet
        now[0] += lifecycle.STATUS_LOG_EVERY_S
        service._log_status()
    started = next(r for r in caplog.records if r.getMessage() == "test service started")
    assert started.metrics_host == "127.0.0.1"
    assert started.shutdown_timeout_s == service.deadlines.shutdown_timeout_s
    assert [r.turns for r in caplog.records if r.getMessage() == "status"] == [2]


def test_the_shutdown_leaves_every_group_then_closes_the_rest_and_says_what_is_left(caplog) -> None:
    service = CountingService(RecordingConsumer(), stop_after=2)
    other = RecordingConsumer(close_error=True)
    service.groups["sightings group"] = other
    closed: list[str] = []
    service.closers += [lambda: closed.append("follower"), lambda: closed.append("database")]
    with caplog.at_level(logging.INFO, "test.lifecycle"):
        assert service.run() == 0
    assert service.consumer.closed and other.closed and closed == ["follower", "database"]
    messages = [r.getMessage() for r in caplog.records]
    assert "could not leave the sightings group cleanly" in messages
    [stopped] = [r for r in caplog.records if r.getMessage() == "stopped"]
    assert stopped.turns == 2 and stopped.seconds >= 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("fatal", "again"), [(False, True), (True, False)])
def test_a_refused_record_is_counted_and_published_again_unless_fatal(
    fatal: bool, again: bool, caplog
) -> None:
    service = CountingService(RecordingConsumer(), stop_after=1)
    error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, fatal=fatal)
    with caplog.at_level(logging.WARNING, "test.lifecycle"):
        assert service._refused(error, "an alert", alert_id="a-1") is again
    assert service.metrics.registry.get_sample_value("test_publish_errors_total") == 1
    assert (service.fatal is not None) is fatal
    warned = [r for r in caplog.records if r.getMessage() == "broker refused an alert, publishing it again"]
    assert len(warned) == (0 if fatal else 1)
    service.http.stop()
