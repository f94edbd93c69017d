"""Load the model repository's pure helper files the way the Python backend does: by path, no Triton."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

MODEL_REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"


def load_model_file(model: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"model_repository_{model}_{name}", MODEL_REPOSITORY / model / "1" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def frames() -> ModuleType:
    return load_model_file("plate_recognition", "frames")


@pytest.fixture(scope="session")
def pictures() -> ModuleType:
    """pictures.py imports `frames` by name, as the Python backend's model directory allows."""
    directory = str(MODEL_REPOSITORY / "plate_recognition" / "1")
    sys.path.insert(0, directory)
    try:
        return load_model_file("plate_recognition", "pictures")
    finally:
        sys.path.remove(directory)


@pytest.fixture(scope="session")
def recognizers() -> ModuleType:
    """recognizers.py imports `contract` by name, as pictures.py imports `frames`."""
    directory = str(MODEL_REPOSITORY / "plate_recognition" / "1")
    sys.path.insert(0, directory)
    try:
        return load_model_file("plate_recognition", "recognizers")
    finally:
        sys.path.remove(directory)


@pytest.fixture(scope="session")
def detectors() -> ModuleType:
    return load_model_file("haar_detector", "detectors")


@pytest.fixture(scope="session")
def detections() -> ModuleType:
    return load_model_file("plate_recognition", "detections")


@pytest.fixture(scope="session")
def budget() -> ModuleType:
    return load_model_file("plate_recognition", "budget")


@pytest.fixture(scope="session")
def contract() -> ModuleType:
    return load_model_file("plate_recognition", "contract")


@pytest.fixture(scope="session")
def heap() -> ModuleType:
    return load_model_file("plate_recognition", "heap")


@pytest.fixture(scope="session")
def masks() -> ModuleType:
    return load_model_file("plate_recognition", "masks")
