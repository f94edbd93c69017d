"""The console's server on a thread of the store: a real uvicorn serving the app that
`web.app.create_app` builds (here a one-route stand-in, so that this tests the serving, not the
console), on a free port, stopped cleanly; a taken port fails the start; no console module: none."""

from __future__ import annotations

import socket
import sys
import types
import urllib.request
from pathlib import Path

import pytest
from fastapi import FastAPI

from stream_worker.store import console_thread
from stream_worker.store.console_thread import ConsoleError, kafka_config, start_console
from stream_worker.store.database import Database, default_url
from stream_worker.store.settings import StoreSettings


def settings(tmp_path: Path, port: int = 0) -> StoreSettings:
    return StoreSettings(
        data_dir=tmp_path,
        console_port=port,
        bootstrap_servers="broker:9092",
        kafka_config={"security.protocol": "SSL"},
    )


@pytest.fixture()
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """`create_app` replaced by a one-route app; the arguments it was called with."""
    calls: list[tuple] = []

    def create_app(store_settings, database, config, skipped=None) -> FastAPI:
        calls.append((store_settings, database, config))
        app = FastAPI()
        app.get("/")(lambda: {"console": "here"})
        return app

    package = types.ModuleType("stream_worker.store.web")
    package.__path__ = []
    module = types.ModuleType(console_thread.WEB_APP)
    module.create_app = create_app
    monkeypatch.setitem(sys.modules, "stream_worker.store.web", package)
    monkeypatch.setitem(sys.modules, console_thread.WEB_APP, module)
    return calls


def test_the_console_is_served_on_a_thread_and_stops(tmp_path: Path, built: list[tuple]) -> None:
    database = Database(default_url(tmp_path))
    console = start_console(settings(tmp_path), database)
    assert console is not None and console.address.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(console.address, timeout=5) as answer:
        assert answer.read() == b'{"console":"here"}'
    console.stop()
    assert not console._thread.is_alive()
    with pytest.raises(OSError):
        urllib.request.urlopen(console.address, timeout=2)
    [(given_settings, given_database, config)] = built
    assert given_database is database and given_settings.console_port == 0
    assert config == {"security.protocol": "SSL", "bootstrap.servers": "broker:9092"}


def test_a_taken_port_fails_the_start(tmp_path: Path, built: list[tuple]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConsoleError, match=f"127.0.0.1:{port}"):
            start_console(settings(tmp_path, port), Database(default_url(tmp_path)))


def test_without_the_console_module_the_store_serves_no_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "stream_worker.store.web", None)
    monkeypatch.setitem(sys.modules, console_thread.WEB_APP, None)  # even if imported earlier
    assert start_console(settings(tmp_path), Database(default_url(tmp_path))) is None


def test_the_kafka_config_given_to_the_console_names_the_broker(tmp_path: Path) -> None:
    assert kafka_config(settings(tmp_path))["bootstrap.servers"] == "broker:9092"
