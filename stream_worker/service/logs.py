"""Structured logs: one JSON object per line on stderr, for log shippers.

Fields passed as `extra={...}` become top-level keys, so `log.info("committed", extra={"partition": 2})`
prints `{"ts": ..., "level": "INFO", "logger": ..., "msg": "committed", "partition": 2}`.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime

import orjson

_STANDARD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
# Libraries whose INFO/DEBUG lines print whole URLs (httpx: "HTTP Request: POST <url>"), and a
# webhook's URL may be a secret: they log warnings and errors only, whatever the services' level.
QUIET_LIBRARIES = ("httpx", "httpcore", "urllib3", "paho", "hpack")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
