"""Where the integration tests find their servers. One place (`containers.server_source`) decides,
in this order:

1. `KAFKA_BOOTSTRAP_SERVERS` / `TRITON_URL` set: use those servers as they are.
2. A reachable Docker engine and `testcontainers` installed: start the Kafka image and the
   project's own Triton image (built from deploy/docker/triton.Dockerfile; see `containers`).
3. Otherwise: start the real local servers as child processes (Tansu broker, tritonserver from
   the nvidia-pytriton wheel) through `stream_worker.launchers`.

Every integration test talks to a real broker and a real Triton server; nothing here fakes one.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from containers import docker_available, server_source, triton_container, triton_image_build
from file_order import load_hint, longest_files_first

# Real RTSP/MJPEG servers and a black hole for the camera tests (tests/stream_servers.py); a real
# PostgreSQL for the history store (tests/postgres.py); the pipeline's services as processes for
# the end-to-end tests (tests/pipeline_services.py).
pytest_plugins = ["stream_servers", "postgres", "pipeline_services"]

REPO_ROOT = Path(__file__).resolve().parent.parent
MODEL_REPOSITORY = REPO_ROOT / "model_repository"
KAFKA_IMAGE = "apache/kafka:3.9.1"


def weights_dir() -> Path:
    return Path(os.environ.get("LPR_WEIGHTS_DIR", REPO_ROOT.parent / "shared" / "weights")).resolve()


def samples_dir() -> Path:
    return weights_dir().parent / "samples"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (tests/file_order.py), so that the test processes of
    scripts/test.sh finish together."""
    order = longest_files_first([item.nodeid for item in items], load_hint())
    items[:] = [items[index] for index in order]


@pytest.fixture(scope="session")
def car_jpeg() -> bytes:
    return (samples_dir() / "car.jpg").read_bytes()


@pytest.fixture(scope="session")
def cat_jpeg() -> bytes:
    return (samples_dir() / "cat.jpeg").read_bytes()


@pytest.fixture(scope="session")
def prepared_model_repository() -> Path:
    """The model repository with the ONNX artifacts exported from the real checkpoints."""
    from stream_worker.nets.prepare import prepare_models

    # One export at a time: the suite's processes (pytest-xdist) share this repository, and the
    # first one exports while the others wait, then find the artifacts current.
    lock_path = Path(tempfile.gettempdir()) / f"stream-worker-prepare-{os.getuid()}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        prepare_models(weights_dir=weights_dir(), repository=MODEL_REPOSITORY)
    return MODEL_REPOSITORY


@pytest.fixture(scope="session")
def triton_url(prepared_model_repository: Path) -> Iterator[str]:
    """gRPC address (host:port) of a Triton server serving `model_repository/`."""
    source = server_source("TRITON_URL", os.environ, docker_available)
    if source == "given":
        yield os.environ["TRITON_URL"]
        return
    if source == "docker":
        from testcontainers.core.container import DockerContainer  # type: ignore[import-untyped]
        from testcontainers.core.waiting_utils import wait_for_logs  # type: ignore[import-untyped]

        build = triton_image_build(REPO_ROOT, weights_dir())
        subprocess.run(build.command(), check=True, env={**os.environ, "DOCKER_BUILDKIT": "1"})
        spec = triton_container(prepared_model_repository)
        container = (
            DockerContainer(spec.image)
            .with_command(spec.command)
            .with_exposed_ports(*spec.ports)
            .with_kwargs(shm_size=spec.shm_size)
        )
        for host, target, mode in spec.volumes:
            container = container.with_volume_mapping(host, target, mode)
        with container:
            wait_for_logs(container, spec.ready_log, timeout=300)
            yield f"{container.get_container_host_ip()}:{container.get_exposed_port(spec.ports[0])}"
        return
    from stream_worker.launchers.triton import LocalTriton, remove_stale_shm_regions

    with LocalTriton(repository=prepared_model_repository) as server:
        yield server.grpc_url
        # The session is done with it and no request is in flight: a graceful stop would only
        # unload the models (~9 s, most of it the Python backend's stubs) while the run waits.
        # Killed instead, with the shared memory its stubs leave.
        server.stop(grace_s=0)
        remove_stale_shm_regions()


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """bootstrap.servers of a Kafka-protocol broker."""
    source = server_source("KAFKA_BOOTSTRAP_SERVERS", os.environ, docker_available)
    if source == "given":
        yield os.environ["KAFKA_BOOTSTRAP_SERVERS"]
        return
    if source == "docker":
        from testcontainers.kafka import KafkaContainer  # type: ignore[import-untyped]

        with KafkaContainer(KAFKA_IMAGE).with_kraft() as kafka:
            yield kafka.get_bootstrap_server()
        return
    from stream_worker.launchers.broker import LocalBroker

    with LocalBroker() as broker:
        yield broker.bootstrap_servers


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A topic/group name no other test (or earlier run against a shared broker) uses."""
    return f"t-{request.node.name[:40]}-{uuid.uuid4().hex[:8]}".replace("[", "-").replace("]", "")
