"""The main-loop skeleton both services share (service/lifecycle.LoopService): how it stops, what a
fatal Kafka error does, how the group leave fails softly, and the status timing."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from stream_worker.service import lifecycle
from stream_worker.service.deadlines import Deadlines
from stream_worker.service.http import HealthServer
from stream_worker.service.lifecycle import LoopService


class RecordingConsumer:
    def __init__(self, close_error: bool = False) -> None:
        self.close_error = close_error
        self.closed = False

    def close(self) -> None:
        self.closed = True
        if self.close_error:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))


class Metrics:
    def render(self) -> bytes:
        return b""


class CountingService(LoopService):
    """Turns until `stop_after` turns (then asks itself to stop), or raises `error` on that turn."""

    log = logging.getLogger("test.lifecycle")
    started_message = "test service started"

    def __init__(
        self, consumer: RecordingConsumer, stop_after: int, error: BaseException | None = None
    ) -> None:
        super().__init__(Deadlines(shutdown_timeout_s=30, revoke_timeout_s=10))
        self.consumer = consumer
        self.http = HealthServer(Metrics(), "127.0.0.1", 0, lambda: (True, "ok"), lambda: 0.0)
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

    def _shutdown(self) -> int:
        self.shutdowns += 1
        self._leave_group()
        self.http.stop()
        return 1 if self.fatal is not None else 0


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
