"""How a service process starts and stops: settings, logs, HTTP port, signals, exit code.

Exit codes: 0 after a clean stop (SIGTERM/SIGINT: drain, flush, commit), 1 after a fatal Kafka
error, 2 for invalid settings or a metrics port that cannot be bound. A second stop signal while
stopping exits at once with 1.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from confluent_kafka import KafkaException

from stream_worker.service.deadlines import Deadlines
from stream_worker.service.http import HealthServer
from stream_worker.service.logs import configure_logging
from stream_worker.service.settings import ConfigError, ServiceSettings, check_kafka_config

log = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=ServiceSettings)


STATUS_LOG_EVERY_S = 15.0


class GroupMember(Protocol):
    def close(self) -> None: ...


class Service(Protocol):
    @property
    def stop_requested_at(self) -> float | None: ...
    def request_stop(self) -> None: ...
    def run(self) -> int: ...


class LoopService(ABC):
    """The life of a consuming service: one main loop until a stop signal or a fatal Kafka error,
    then its own shutdown within `deadlines`. Subclasses set `log`, `started_message`, `http` and
    `consumer`."""

    log: ClassVar[logging.Logger]
    started_message: ClassVar[str]
    http: HealthServer
    consumer: GroupMember

    def __init__(self, deadlines: Deadlines) -> None:
        self.deadlines = deadlines
        self.fatal: BaseException | None = None
        self._last_status_log = time.monotonic()

    @property
    def stop_requested_at(self) -> float | None:
        return self.deadlines.stop_requested_at

    def request_stop(self) -> None:
        self.deadlines.request_stop()

    def run(self) -> int:
        """Process until asked to stop; returns the exit code."""
        self.http.start()
        self.log.info(self.started_message, extra={"metrics_port": self.http.port, **self._started_fields()})
        try:
            while self.stop_requested_at is None and self.fatal is None:
                self._turn()
        except KafkaException as error:
            self.fatal = error
        if self.fatal is not None:
            self.log.error("fatal Kafka error, stopping without draining", extra={"error": str(self.fatal)})
        return self._shutdown()

    @abstractmethod
    def _started_fields(self) -> dict[str, Any]:
        """What the start log line says besides the metrics port."""

    @abstractmethod
    def _turn(self) -> None:
        """One pass of the main loop: consume a chunk and move everything along."""

    @abstractmethod
    def _shutdown(self) -> int:
        """Drain what the service's guarantees ask for, leave the group; returns the exit code."""

    def _leave_group(self) -> None:
        try:
            self.consumer.close()
        except KafkaException as error:
            self.log.warning("could not leave the group cleanly", extra={"error": str(error)})

    def _status_due(self) -> bool:
        """True every STATUS_LOG_EVERY_S: a periodic progress line shows where a stalled service waits."""
        now = time.monotonic()
        if now - self._last_status_log < STATUS_LOG_EVERY_S:
            return False
        self._last_status_log = now
        return True


def serve(load: Callable[[], Settings], build: Callable[[Settings], Service]) -> int:
    """Load and check the settings, build the service (its HTTP server binds first), run it until a
    stop signal; returns the exit code."""
    try:
        settings = load()
        check_kafka_config(settings)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    try:
        service = build(settings)
    except OSError as error:
        print(f"error: --metrics-port {settings.metrics_port}: {error}", file=sys.stderr)
        return 2

    def on_signal(signum: int, _frame: object) -> None:
        if service.stop_requested_at is not None:
            log.warning("second stop signal: exiting at once", extra={"signal": signum})
            os._exit(1)
        log.info("stop signal received", extra={"signal": signal.Signals(signum).name})
        service.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return service.run()
