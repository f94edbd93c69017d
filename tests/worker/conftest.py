"""Fixtures of the worker's integration tests: the topics, the output reader, the worker processes."""

from __future__ import annotations

import signal
from pathlib import Path

import cv2
import numpy as np
import pytest
from service_processes import ServiceProcess as WorkerProcess
from service_processes import TopicReader

from stream_worker.launchers.broker import create_topics
from tests.worker.streams import MAX_BATCH_FRAMES, MAX_INFLIGHT_BATCHES, PARTITIONS, Outputs, Topics


@pytest.fixture(scope="module")
def small_jpeg() -> bytes:
    """A tiny plain frame: valid for the pipeline (an event with no plates) and fast on CPU."""
    image = np.full((48, 64, 3), 127, dtype=np.uint8)
    ok, encoded = cv2.imencode(".jpg", image)
    assert ok
    return encoded.tobytes()


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(f"{unique_name}-frames", f"{unique_name}-plates", f"{unique_name}-dlq")
    create_topics(kafka_bootstrap, [names.frames, names.plates, names.dlq], PARTITIONS)
    return names


@pytest.fixture
def outputs(kafka_bootstrap: str, topics: Topics):
    reader = Outputs(TopicReader(kafka_bootstrap, topics.plates), TopicReader(kafka_bootstrap, topics.dlq))
    yield reader
    reader.close()


# --- the worker process ----------------------------------------------------------------------


@pytest.fixture
def start_worker(tmp_path: Path, kafka_bootstrap: str, topics: Topics, unique_name: str):
    started: list[WorkerProcess] = []

    def start(triton_url: str, *extra: str) -> WorkerProcess:
        args = [
            "--bootstrap-servers",
            kafka_bootstrap,
            "--triton-url",
            triton_url,
            "--group-id",
            f"{unique_name}-group",
            "--input-topic",
            topics.frames,
            "--output-topic",
            topics.plates,
            "--dlq-topic",
            topics.dlq,
            "--session-timeout-ms",
            "6000",
            "--metrics-port",
            "0",
            "--max-batch-frames",
            str(MAX_BATCH_FRAMES),
            "--max-inflight-batches",
            str(MAX_INFLIGHT_BATCHES),
            # The CPU Triton serves one request at a time: a batch may queue behind the others.
            "--triton-timeout-s",
            "300",
            "--retry-max-backoff-s",
            "1",
            *extra,
        ]
        worker = WorkerProcess(args, tmp_path / f"worker-{len(started)}.log").start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.is_running():
            worker.stop(signal.SIGKILL)
