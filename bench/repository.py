"""The model repositories a benchmark serves: ours (possibly with changed parameters) and the baseline.

Both designs must run the same computation with the same parameters, so the baseline reads them
from the repository actually served: the bench hands it a copy of `bench/baseline_repository/`
whose configs name that repository (`served_repository`, `served_config_name`). Ours is served
from a snapshot copy of `--repository` taken at the start (so that edits to the tree during a run
cannot reach a model that Triton reloads), with `--parameter MODEL.KEY=VALUE` applied to it (e.g.
the detector's scales); ours, the baseline and the in-process limit all use that snapshot.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

from bench.pipeline import BenchError

BASELINE_REPOSITORY = Path(__file__).resolve().parent / "baseline_repository"
_PARAMETER = re.compile(
    r'parameters:\s*\{\s*key:\s*"(?P<key>[^"]+)"\s*,?\s*value:\s*\{\s*string_value:\s*"(?P<value>[^"]*)"\s*\}\s*\}'
)


def config_path(repository: Path, model: str, model_config_name: str | None = None) -> Path:
    """The config Triton loads for `model`: configs/NAME.pbtxt when it exists, else config.pbtxt."""
    if model_config_name:
        named = repository / model / "configs" / f"{model_config_name}.pbtxt"
        if named.is_file():
            return named
    return repository / model / "config.pbtxt"


def config_parameters(path: Path) -> dict[str, str]:
    """The `parameters` of a config.pbtxt (string values), as the Python backend hands them over."""
    return {match["key"]: match["value"] for match in _PARAMETER.finditer(path.read_text())}


def parameter_line(key: str, value: str) -> str:
    return f'parameters: {{ key: "{key}", value: {{ string_value: "{value}" }} }}'


def set_parameter(text: str, key: str, value: str) -> str:
    """A config's text with parameter `key` set to `value` (replaced where present, else appended)."""
    if '"' in key or '"' in value or "\\" in value:
        raise BenchError(f"parameter {key}={value!r}: quotes and backslashes are not supported")
    replaced, count = re.subn(
        _PARAMETER.pattern.replace('(?P<key>[^"]+)', re.escape(key)),
        lambda _match: parameter_line(key, value),
        text,
    )
    return replaced if count else f"{text.rstrip()}\n{parameter_line(key, value)}\n"


def parse_overrides(items: list[str]) -> dict[str, dict[str, str]]:
    """`["plate_recognition.detector_scales=1.0"]` -> {"plate_recognition": {"detector_scales": "1.0"}}."""
    overrides: dict[str, dict[str, str]] = {}
    for item in items:
        target, separator, value = item.partition("=")
        model, dot, key = target.partition(".")
        if not (separator and dot and model and key):
            raise BenchError(f"--parameter {item!r}: expected MODEL.KEY=VALUE")
        overrides.setdefault(model, {})[key] = value
    return overrides


def load_model_file(repository: Path, model: str, name: str) -> ModuleType:
    """A model's helper module loaded by path, the way the Python backend loads it."""
    path = repository / model / "1" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{model}_{name}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise BenchError(f"{path} not found: is --repository a stream_worker model repository?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def served_repositories(
    repository: Path,
    model_config_name: str | None = None,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
) -> Iterator[tuple[Path, Path]]:
    """(ours, baseline) to serve: a copy of `repository` with `overrides`, and a baseline repository
    pointing at it. Both live in a temporary folder removed on exit."""
    with tempfile.TemporaryDirectory(prefix="stream-worker-bench-") as scratch:
        ours = Path(scratch) / "model_repository"
        if not repository.is_dir():
            raise BenchError(f"model repository {repository} not found")
        shutil.copytree(repository, ours, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        for model, parameters in (overrides or {}).items():
            path = config_path(ours, model, model_config_name)
            if not path.is_file():
                raise BenchError(f"--parameter: no model {model!r} in {repository}")
            text = path.read_text()
            for key, value in parameters.items():
                text = set_parameter(text, key, value)
            path.write_text(text)
        baseline = Path(scratch) / "baseline_repository"
        shutil.copytree(
            BASELINE_REPOSITORY, baseline, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
        for config in sorted(baseline.glob("*/config.pbtxt")):
            text = set_parameter(config.read_text(), "served_repository", str(ours))
            config.write_text(set_parameter(text, "served_config_name", model_config_name or ""))
        yield ours, baseline
