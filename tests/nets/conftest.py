"""Shared inputs for the network tests: the real weights, a real plate crop, other real crops."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import samples_dir, weights_dir

# The van's plate in samples/car.jpg (780x439), x1, y1, x2, y2 in pixels.
PLATE_BOX = (89, 329, 136, 345)
CROP_WIDTH, CROP_HEIGHT = 94, 24
VERTICAL_PADDING = 0.2


def crop_for_lprnet(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The training-time pre-processing: pad 20% of the height above and below, cubic resize to
    94x24, normalise to about [-1, 1], channels-first float32 `[3, 24, 94]`."""
    x1, y1, x2, y2 = box
    pad = VERTICAL_PADDING * (y2 - y1)
    top, bottom = max(0, round(y1 - pad)), min(image.shape[0], round(y2 + pad))
    patch = cv2.resize(image[top:bottom, x1:x2], (CROP_WIDTH, CROP_HEIGHT), interpolation=cv2.INTER_CUBIC)
    return ((patch.astype(np.float32) - 127.5) * 0.0078125).transpose(2, 0, 1).copy()


@pytest.fixture(scope="session")
def checkpoints() -> dict[str, Path]:
    return {name: weights_dir() / f"{name}.pth" for name in ("stn", "lprnet")}


@pytest.fixture(scope="session")
def car_image() -> np.ndarray:
    image = cv2.imread(str(samples_dir() / "car.jpg"))
    assert image is not None, f"cannot read {samples_dir() / 'car.jpg'}"
    return image


@pytest.fixture(scope="session")
def plate_crop(car_image: np.ndarray) -> np.ndarray:
    return crop_for_lprnet(car_image, PLATE_BOX)


@pytest.fixture(scope="session")
def other_crops(car_image: np.ndarray) -> np.ndarray:
    """32 crops of plate-like size from all over the photo, none of them the plate."""
    height, width = car_image.shape[:2]
    boxes = [
        (x, y, x + 60, y + 16)
        for x in np.linspace(0, width - 61, 8, dtype=int)
        for y in np.linspace(0, height - 17, 4, dtype=int)
    ]
    return np.stack([crop_for_lprnet(car_image, box) for box in boxes])


@pytest.fixture(scope="session")
def exported_repository(prepared_model_repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the prepared model repository (the three ONNX artifacts and their stamps).

    A copy, not a second export: `prepared_model_repository` already exported them from the real
    checkpoints once this session (or found them current), and exporting costs about 30 s. Tests
    that change it must work on a further copy (`shutil.copytree`)."""
    return Path(
        shutil.copytree(
            prepared_model_repository, tmp_path_factory.mktemp("exported") / "repository", symlinks=True
        )
    )
