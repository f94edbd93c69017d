"""The Kubernetes `triton-tls` component read as data: the flags it gives Triton and the environment
it gives the workers, with the Secrets' mounted files mapped to local ones.

tests/test_triton_tls.py starts the real Triton and `stream-worker run` with exactly these, so a
wrong flag, variable or path in the shipped manifest fails a real TLS handshake there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

COMPONENT = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes" / "components" / "triton-tls"


def _operations(deployment: str) -> list[dict]:
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    [patch] = [
        p["patch"]
        for p in kustomization["patches"]
        if p["target"] == {"kind": "Deployment", "name": deployment}
    ]
    return yaml.safe_load(patch)


def _added(operations: list[dict], path_end: str) -> list:
    return [op["value"] for op in operations if op["op"] == "add" and op["path"].endswith(path_end)]


def _localise(value: str, mount: str, files: Mapping[str, Path]) -> str:
    """`value` with every `<mount>/<key>` replaced by the local file given for that key."""
    for key, local in files.items():
        value = value.replace(f"{mount}/{key}", str(local))
    assert f"{mount}/" not in value, f"{value}: a mounted file without a local stand-in"
    return value


def triton_args(files: Mapping[str, Path]) -> list[str]:
    """Triton's added arguments; `files` maps the Secret `triton-tls`'s keys to local files."""
    operations = _operations("triton")
    [mount] = _added(operations, "/volumeMounts/-")
    return [_localise(arg, mount["mountPath"], files) for arg in _added(operations, "/args/-")]


def worker_environment(files: Mapping[str, Path]) -> dict[str, str]:
    """The workers' added variables; `files` maps the Secret `stream-worker-triton-tls`'s keys."""
    operations = _operations("stream-worker")
    [mount] = _added(operations, "/volumeMounts/-")
    return {
        env["name"]: _localise(env["value"], mount["mountPath"], files)
        for env in _added(operations, "/env/-")
    }
