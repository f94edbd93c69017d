"""How the fixtures choose and build their servers, checked without Docker (tests/containers.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from containers import (
    MODELS_IN_CONTAINER,
    TRITON_GRPC_PORT,
    server_source,
    triton_container,
    triton_image_build,
)

REPO_ROOT = Path(__file__).resolve().parent.parent


def _docker_must_not_be_asked() -> bool:
    raise AssertionError("a given address must win without asking Docker")


def test_a_given_address_wins_then_docker_then_local_processes() -> None:
    assert server_source("TRITON_URL", {"TRITON_URL": "t:8001"}, _docker_must_not_be_asked) == "given"
    assert server_source("TRITON_URL", {"TRITON_URL": ""}, lambda: True) == "docker"
    assert server_source("TRITON_URL", {"KAFKA_BOOTSTRAP_SERVERS": "k:9092"}, lambda: True) == "docker"
    assert server_source("TRITON_URL", {}, lambda: False) == "local"


def test_the_image_is_ours_built_with_the_weights_as_a_named_context(tmp_path: Path) -> None:
    build = triton_image_build(REPO_ROOT, tmp_path / "weights")
    assert not build.tag.startswith("nvcr.io/")  # the stock image lacks ONNX Runtime and OpenCV
    command = build.command()
    assert command[:2] == ["docker", "build"]
    assert command[command.index("-f") + 1] == str(REPO_ROOT / "deploy" / "docker" / "triton.Dockerfile")
    assert f"--build-context=weights={(tmp_path / 'weights').resolve()}" in command
    assert command[command.index("-t") + 1] == build.tag
    assert command[-1] == str(REPO_ROOT)  # the Dockerfile COPYs paths relative to the repository root


def test_container_serves_the_prepared_repository_read_only_with_default_configs(tmp_path: Path) -> None:
    spec = triton_container(tmp_path / "repository")
    assert spec.image == triton_image_build(REPO_ROOT, tmp_path).tag
    # Exactly this: no --model-config-name, so not the image CMD's `gpu` configs, and no model control.
    assert spec.command == ["tritonserver", f"--model-repository={MODELS_IN_CONTAINER}"]
    assert spec.volumes == [(str((tmp_path / "repository").resolve()), MODELS_IN_CONTAINER, "ro")]
    assert spec.ports == [TRITON_GRPC_PORT]
    size = re.fullmatch(r"(\d+)([mg])", spec.shm_size)
    assert size and int(size[1]) * (1024 if size[2] == "g" else 1) >= 256, spec.shm_size


@pytest.mark.parametrize(
    "config",
    sorted((REPO_ROOT / "model_repository").glob("*/config.pbtxt")),
    ids=lambda path: path.parent.name,
)
def test_the_default_configs_need_no_gpu(config: Path) -> None:
    """A machine with Docker need not have a GPU: what the container serves runs on CPUs."""
    text = config.read_text()
    assert "KIND_GPU" not in text and "tensorrt" not in text.lower(), config
