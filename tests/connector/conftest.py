"""The connector's test fixtures: a test's topics, the connector processes it starts (killed at its
end), a reader of its frames topic; the helpers in connector_process.py are importable."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.append(HERE)

from connector_process import CAMERA_PARTITIONS, FRAME_PARTITIONS, Connector, Topics  # noqa: E402
from service_processes import TopicReader  # noqa: E402

from stream_worker.launchers.broker import create_topics  # noqa: E402
from stream_worker.service.compacted import ensure_compacted_topic  # noqa: E402


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(
        f"{unique_name}-frames", f"{unique_name}-cameras", f"{unique_name}-status", f"{unique_name}-g"
    )
    create_topics(kafka_bootstrap, [names.frames], FRAME_PARTITIONS)
    ensure_compacted_topic(kafka_bootstrap, names.cameras, partitions=CAMERA_PARTITIONS)
    return names


@pytest.fixture
def start_connector(tmp_path: Path, kafka_bootstrap: str, topics: Topics):
    """start(*flags) -> a running, ready connector of this test's topics (replica-0, replica-1...)."""
    started: list[Connector] = []

    def start(*extra: str) -> Connector:
        args = [
            "--bootstrap-servers", kafka_bootstrap,
            "--frames-topic", topics.frames,
            "--cameras-topic", topics.cameras,
            "--status-topic", topics.status,
            "--group-id", topics.group,
            "--session-timeout-ms", "6000",
            "--metrics-port", "0",
            "--status-interval-s", "1",
            "--replica-id", f"replica-{len(started)}",
            *extra,
        ]  # fmt: skip
        connector = Connector(args, tmp_path / f"connector-{len(started)}.log")
        connector.start()
        started.append(connector)
        connector.wait_ready()
        return connector

    yield start
    for connector in started:
        if connector.is_running():
            connector.stop(signal.SIGKILL)


@pytest.fixture
def frames(kafka_bootstrap: str, topics: Topics) -> Iterator[TopicReader]:
    reader = TopicReader(kafka_bootstrap, topics.frames, FRAME_PARTITIONS)
    yield reader
    reader.close()
