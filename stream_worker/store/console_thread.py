"""The console's web server (uvicorn) on a thread of the store's process, beside the consumer loop.

The console's app is engineer C's `stream_worker.store.web.app.create_app(settings, database,
kafka_config)`; until that module is in the tree the store runs without it (a warning says so).
uvicorn installs no signal handlers off the main thread: the store's own SIGTERM handling stops it
(`ConsoleThread.stop`). A port that cannot be bound fails the start with ConsoleError.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from stream_worker.store.database import Database
from stream_worker.store.settings import StoreSettings

log = logging.getLogger("stream_worker.store")

WEB_APP = "stream_worker.store.web.app"
START_TIMEOUT_S = 30.0
GRACEFUL_S = 2  # open live feeds (SSE) are cut after this on stop


class ConsoleError(RuntimeError):
    """The console could not start (its port taken, its app failing to build)."""


class ConsoleThread:
    """A started uvicorn server; `address` is where it listens (port 0 resolved)."""

    def __init__(self, server: Any, thread: threading.Thread, address: str) -> None:
        self._server, self._thread, self.address = server, thread, address

    def stop(self, timeout_s: float = GRACEFUL_S + 3) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=timeout_s)


def kafka_config(settings: StoreSettings) -> dict[str, str]:
    """What the console's writes to the compacted topics connect with: the store's extra
    librdkafka settings plus its bootstrap.servers."""
    return {**settings.kafka_config, "bootstrap.servers": settings.bootstrap_servers}


def start_console(
    settings: StoreSettings, database: Database, skipped: Callable[[str], None] = lambda topic: None
) -> ConsoleThread | None:
    """Build the console's app and serve it on a thread; None when this build has no console.
    `skipped(topic)`: a record the console could not use (counted by the store)."""
    try:
        from stream_worker.store.web.app import create_app
    except ModuleNotFoundError as missing:
        if missing.name not in (WEB_APP, WEB_APP.rpartition(".")[0]):
            raise  # something the console needs is missing: say so, do not hide it
        log.warning("the console is not available in this build; serving the store only")
        return None
    import uvicorn

    try:
        app = create_app(settings, database, kafka_config(settings), skipped=skipped)
    except Exception as error:
        raise ConsoleError(f"the console could not be built: {error}") from error
    config = uvicorn.Config(
        app,
        host=settings.console_host,
        port=settings.console_port,
        log_config=None,  # the process's JSON logging
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_S,
        # X-Forwarded-* only from the configured proxies (uvicorn believes 127.0.0.1 unless told):
        # the client address is what sign-in limits count.
        proxy_headers=bool(settings.forwarded_allow_ips.strip()),
        forwarded_allow_ips=settings.forwarded_allow_ips.strip() or None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=_run, args=(server,), name="console", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConsoleError(
                f"the console could not listen on {settings.console_host}:{settings.console_port} "
                "(--console-host/--console-port; the port in use?)"
            )
        time.sleep(0.02)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    address = f"http://{_url_host(host)}:{port}/"
    log.info("console serving", extra={"address": address})
    return ConsoleThread(server, thread, address)


def _run(server: Any) -> None:
    # uvicorn exits on a port it cannot bind (and logs it); start_console fails the start on that.
    with contextlib.suppress(SystemExit):
        server.run()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
