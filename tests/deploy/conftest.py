"""Shared inputs of the deployment tests: the deploy/ folder, the rendered kustomizations, and the
image-pinning rule that Compose, Kubernetes and the Dockerfiles all obey.

Everything here is offline: kustomize is rendered by the `kubectl` binary when it is installed
(it ships kustomize), the schemas come from PyPI packages (check-jsonschema, kubernetes-validate,
cloudcoil-models-keda).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from support import require

REPO_ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE_DIR = REPO_ROOT / "deploy" / "kubernetes"
# Every kustomization users apply: name -> folder.
KUSTOMIZATIONS = {
    "base": KUSTOMIZE_DIR / "base",
    "gpu": KUSTOMIZE_DIR / "overlays" / "gpu",
    "gpu-tls": KUSTOMIZE_DIR / "overlays" / "gpu-tls",
}

# registry/name:tag (optionally @sha256:digest); a tag that names a version, never `latest`.
_IMAGE = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9._/-]*(?::\d+/[a-z0-9._/-]+)?):(?P<tag>\w[\w.-]*)(@sha256:[0-9a-f]{64})?$"
)
_VERSION_TAG = re.compile(r"^v?\d+(\.\d+)+([-.][\w.-]+)?$")


def image_pin_problem(image: str) -> str | None:
    """Why `image` is not pinned to a version, or None when it is."""
    match = _IMAGE.match(image)
    if not match:
        return f"{image!r} has no tag"
    tag = match["tag"]
    if tag == "latest" or not _VERSION_TAG.match(tag):
        return f"{image!r}: tag {tag!r} is not a version"
    return None


@pytest.fixture(scope="session")
def assert_pinned() -> Callable[[str, str], None]:
    def check(image: str, where: str) -> None:
        problem = image_pin_problem(image)
        assert problem is None, f"{where}: {problem}"

    return check


@pytest.fixture(scope="session")
def kubectl() -> str:
    path = shutil.which("kubectl")
    require(path, "kubectl (which carries kustomize) is not installed: rendering is not checked")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def rendered(kubectl: str) -> dict[str, list[dict]]:
    """`kubectl kustomize` output of every kustomization, as lists of objects."""
    builds = {}
    for name, folder in KUSTOMIZATIONS.items():
        result = subprocess.run(
            [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, f"kustomize {folder} failed:\n{result.stderr}"
        builds[name] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return builds
