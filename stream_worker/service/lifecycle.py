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
from collections.abc import Callable
from typing import Protocol, TypeVar

from stream_worker.service.logs import configure_logging
from stream_worker.service.settings import ConfigError, ServiceSettings, check_kafka_config

log = logging.getLogger(__name__)

Settings = TypeVar("Settings", bound=ServiceSettings)


class Service(Protocol):
    @property
    def stop_requested_at(self) -> float | None: ...
    def request_stop(self) -> None: ...
    def run(self) -> int: ...


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
