"""pictures.py: the plate's picture for people is the network's warp at a readable size, a bounded JPEG."""

from __future__ import annotations

from types import ModuleType

import cv2
import numpy as np
import pytest

# The sample van's plate in car.jpg (780x439), as the detector finds it (test_pipeline.py).
VAN_BOX = (94, 331, 132, 342)


def _corners(x1: float, y1: float, x2: float, y2: float) -> np.ndarray:
    return np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)


def _plate_scene(width: int = 400, height: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """A grey frame with a white plate and black characters; the plate's corners."""
    image = np.full((height, width, 3), 90, np.uint8)
    cv2.rectangle(image, (100, 80), (300, 124), (255, 255, 255), -1)
    cv2.putText(image, "A123BC77", (108, 115), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 0, 0), 3)
    return image, _corners(100, 80, 300, 124)


def _decoded(data: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def test_the_picture_keeps_the_plates_aspect_at_a_readable_height(pictures: ModuleType) -> None:
    width, height = pictures.picture_size(_corners(100, 80, 300, 124))  # 200x44 plate: downscaled
    assert height == pictures.PICTURE_HEIGHT
    plate_aspect = (200 * (1 + 2 * 0.08)) / (44 * (1 + 2 * 0.2))
    assert width / height == pytest.approx(plate_aspect, rel=0.02)


def test_a_small_plate_is_magnified_at_most_the_limit(pictures: ModuleType) -> None:
    width, height = pictures.picture_size(_corners(*VAN_BOX))  # 38x11 px
    assert height == round(11 * 1.4 * pictures.PICTURE_MAX_UPSCALE) < pictures.PICTURE_HEIGHT
    assert width == pytest.approx(height * (38 * 1.16) / (11 * 1.4), abs=1)
    assert pictures.picture_size(_corners(0, 0, 6, 2))[1] == pictures.PICTURE_MIN_HEIGHT
    # Degenerate corners give a bounded, non-empty picture.
    width, height = pictures.picture_size(np.zeros((4, 2), np.float32))
    assert 1 <= width <= pictures.PICTURE_ASPECTS[1] * height


def test_the_picture_is_the_networks_warp(pictures: ModuleType, frames: ModuleType) -> None:
    """Shrunk to the network's 94x24, the picture is the plate the recogniser sees."""
    image, corners = _plate_scene()
    picture = pictures.plate_picture(image, corners)
    assert picture.dtype == np.uint8 and picture.shape[:2][::-1] == pictures.picture_size(corners)
    network = frames.plate_tensor(image, corners) * 128 + 127.5  # back to pixels, [3, 24, 94]
    shrunk = cv2.resize(picture, (94, 24), interpolation=cv2.INTER_AREA).transpose(2, 0, 1)
    assert np.corrcoef(shrunk.reshape(-1), network.reshape(-1))[0, 1] > 0.9
    # Rotated by 10 degrees, warped from its corners, it comes out upright.
    rotation = cv2.getRotationMatrix2D((200, 100), 10, 1.0)
    tilted = cv2.warpAffine(image, rotation, (400, 200))
    tilted_corners = cv2.transform(corners[None], rotation)[0]
    upright = pictures.plate_picture(tilted, tilted_corners)
    assert np.corrcoef(upright.reshape(-1), picture.reshape(-1))[0, 1] > 0.9


def test_the_jpeg_is_bounded_and_decodes(pictures: ModuleType) -> None:
    image, corners = _plate_scene()
    data = pictures.plate_jpeg(image, corners)
    assert data.startswith(b"\xff\xd8\xff") and len(data) <= pictures.PICTURE_MAX_BYTES
    assert _decoded(data).shape[:2][::-1] == pictures.picture_size(corners)


def test_noise_lowers_quality_and_size_until_it_fits(pictures: ModuleType) -> None:
    noise = np.random.default_rng(7).integers(0, 256, (64, 512, 3), np.uint8)  # the largest picture
    assert len(cv2.imencode(".jpg", noise, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]) > pictures.PICTURE_MAX_BYTES
    data = pictures.encode_bounded(noise)
    assert 0 < len(data) <= pictures.PICTURE_MAX_BYTES
    assert _decoded(data).shape[1] <= 512
    # A bound nothing can meet gives no picture rather than an oversized one.
    assert pictures.encode_bounded(noise, max_bytes=100) == b""


def test_the_sample_vans_picture(pictures: ModuleType, frames: ModuleType, car_jpeg: bytes) -> None:
    image = frames.decode_jpeg(car_jpeg, 40_000_000)
    data = pictures.plate_jpeg(image, _corners(*VAN_BOX))
    picture = _decoded(data)
    print(f"van's picture: {picture.shape[1]}x{picture.shape[0]}, {len(data)} bytes")
    assert len(data) <= pictures.PICTURE_MAX_BYTES
    assert picture.shape[0] >= 48 and picture.shape[1] / picture.shape[0] == pytest.approx(2.86, rel=0.05)
