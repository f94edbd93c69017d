"""Where the integration fixtures get their servers, and what they run when a Docker engine is there.

The decision (given addresses, else Docker, else local child processes) and the Triton container's
specification are plain data here, so that `tests/test_containers.py` checks them on machines
without Docker. The stock Triton image cannot serve our models (its Python has neither ONNX
Runtime nor OpenCV), so the fixtures build the project's own image from
deploy/docker/triton.Dockerfile and mount the prepared model repository of the working tree over
the one baked in: the tests then run the code under test, in the image production runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Source = Literal["given", "docker", "local"]

TRITON_IMAGE = "stream-worker-triton:tests"  # built here, never pushed
TRITON_DOCKERFILE = Path("deploy/docker/triton.Dockerfile")
MODELS_IN_CONTAINER = "/models"
TRITON_GRPC_PORT = 8001


def server_source(variable: str, environ: Mapping[str, str], docker_answers: Callable[[], bool]) -> Source:
    """The one order every server fixture follows: an address in the env `variable`, else a
    container when a Docker engine answers, else the local server as a child process."""
    if environ.get(variable):
        return "given"
    return "docker" if docker_answers() else "local"


def docker_available() -> bool:
    """A Docker engine answers and testcontainers is installed."""
    try:
        import docker  # type: ignore[import-untyped]
        import testcontainers  # type: ignore[import-untyped]  # noqa: F401

        docker.from_env().ping()
        return True
    except Exception:
        return False


@dataclass(frozen=True)
class ImageBuild:
    tag: str
    dockerfile: Path
    context: Path
    named_contexts: Mapping[str, Path]

    def command(self) -> list[str]:
        """`docker build` with BuildKit's named contexts (the Dockerfile bind-mounts them)."""
        named = [f"--build-context={name}={path}" for name, path in self.named_contexts.items()]
        return ["docker", "build", "-f", str(self.dockerfile), *named, "-t", self.tag, str(self.context)]


@dataclass(frozen=True)
class ContainerSpec:
    image: str
    command: list[str]
    volumes: list[tuple[str, str, str]]  # host path, container path, mode
    ports: list[int]
    shm_size: str
    ready_log: str


def triton_image_build(repo_root: Path, weights_dir: Path) -> ImageBuild:
    """Our Triton image; the weights reach the build only as the named context `weights`."""
    return ImageBuild(
        tag=TRITON_IMAGE,
        dockerfile=repo_root / TRITON_DOCKERFILE,
        context=repo_root,
        named_contexts={"weights": weights_dir.resolve()},
    )


def triton_container(prepared_repository: Path) -> ContainerSpec:
    """The image's CMD picks the `gpu` configs; the tests run the default (CPU) ones."""
    return ContainerSpec(
        image=TRITON_IMAGE,
        command=["tritonserver", f"--model-repository={MODELS_IN_CONTAINER}"],
        volumes=[(str(prepared_repository.resolve()), MODELS_IN_CONTAINER, "ro")],
        ports=[TRITON_GRPC_PORT],
        # The Python backend passes tensors through /dev/shm; Docker's default 64 MiB is too small.
        shm_size="1g",
        ready_log="Started GRPCInferenceService",
    )
