"""How a service process starts and stops: settings, logs, HTTP port, signals, exit code, and the
skeleton every consuming service shares (`LoopService`): its health server, its main loop, one
policy for a record the broker refuses, one shutdown sequence.

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
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

from confluent_kafka import KafkaError, KafkaException

from stream_worker.service.commits import Committer
from stream_worker.service.deadlines import Deadlines
from stream_worker.service.http import HealthServer, LoopClock
from stream_worker.service.logs import configure_logging
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.publisher import Publisher
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
    then the shutdown sequence within its deadlines. Subclasses set `log`, `started_message` and
    `consumer`, and list in `groups` the other groups they leave and in `closers` what they close
    once the groups are left (followers of compacted topics, history readers, a database)."""

    log: ClassVar[logging.Logger]
    started_message: ClassVar[str]
    started_settings: ClassVar[tuple[str, ...]] = ()  # the settings the start line names
    consumer: GroupMember

    def __init__(self, settings: ServiceSettings, metrics: ServiceMetrics) -> None:
        self._settings = settings
        self._service_metrics = metrics
        self.deadlines = Deadlines(settings.shutdown_timeout_s, settings.revoke_timeout_s)
        self.fatal: BaseException | None = None
        self._last_status_log = time.monotonic()
        self._kafka_config = settings.redacted_kafka_config()
        self.loop_clock = LoopClock()
        self.groups: dict[str, GroupMember] = {}  # besides `consumer`: name -> member
        self.closers: list[Callable[[], None]] = []
        # First, so that a busy --metrics-port fails before anything connects anywhere.
        self.http = HealthServer(
            metrics, settings.metrics_host, settings.metrics_port, self._readiness, self.loop_clock.age_s
        )

    @property
    def stop_requested_at(self) -> float | None:
        return self.deadlines.stop_requested_at

    def request_stop(self) -> None:
        self.deadlines.request_stop()

    def run(self) -> int:
        """Process until asked to stop; returns the exit code."""
        self.http.start()
        fields = {**self._started_fields(), "kafka_config": self._kafka_config}
        self.log.info(self.started_message, extra={"metrics_port": self.http.port, **fields})
        try:
            while self.stop_requested_at is None and self.fatal is None:
                self._turn()
        except KafkaException as error:
            self.fatal = error
        if self.fatal is not None:
            self.log.error("fatal Kafka error, stopping without draining", extra={"error": str(self.fatal)})
        return self._shutdown()

    def _started_fields(self) -> dict[str, Any]:
        """What the start log line says besides the metrics port and the Kafka settings: the
        `started_settings`, by name."""
        return {name: getattr(self._settings, name) for name in self.started_settings}

    @abstractmethod
    def _turn(self) -> None:
        """One pass of the main loop: consume a chunk and move everything along."""

    @abstractmethod
    def _readiness(self) -> tuple[bool, str]:
        """What /readyz answers: ready or not, and why."""

    def _finish(self) -> Mapping[str, object]:
        """Flush and commit what the service's guarantees ask for (after a fatal error: nothing
        uncertain); returns what is left, for the "stopped" line."""
        return {}

    def _shutdown(self) -> int:
        """Finish (flush, commit), leave the groups, close the rest, stop serving; returns the exit code."""
        self.deadlines.begin_shutdown()
        left = self._finish()
        self._leave(self.consumer, "group")
        for name, member in self.groups.items():
            self._leave(member, name)
        for close in self.closers:
            close()
        self.http.stop()
        self.log.info("stopped", extra={"seconds": round(self.deadlines.shutdown_seconds(), 3), **left})
        return 1 if self.fatal is not None else 0

    def _leave(self, member: GroupMember, name: str) -> None:
        try:
            member.close()
        except KafkaException as error:
            self.log.warning(f"could not leave the {name} cleanly", extra={"error": str(error)})

    def _flush_and_commit(self, publisher: Publisher, committer: Committer) -> None:
        """Before partitions are revoked: what is queued flushed (until the revocation's deadline),
        then committed; after a fatal error, nothing."""
        if self.fatal is None:
            publisher.flush(self.deadlines.drain_left(self.deadlines.revocation_end()))
            committer.commit()

    def _refused(self, error: KafkaError, what: str, **ids: object) -> bool:
        """The one policy for a record the broker refused: counted; a fatal error stops the service
        (nothing more is committed); any other is logged and True: the caller publishes it again."""
        self._service_metrics.publish_errors.inc()
        if error.fatal():
            self.fatal = KafkaException(error)
            return False
        self.log.warning(f"broker refused {what}, publishing it again", extra={**ids, "error": error.str()})
        return True

    def _log_status(self) -> None:
        """Every STATUS_LOG_EVERY_S, a progress line of what `_status` says."""
        if self._status_due():
            self.log.info("status", extra=dict(self._status()))

    def _status(self) -> Mapping[str, object]:
        """What the periodic progress line says: where the service's records are waiting."""
        return {}

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
