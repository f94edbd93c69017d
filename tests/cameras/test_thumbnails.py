"""The motion gate's grey copy of a JPEG: the luma, DCT-scaled to at least MIN_WIDTH columns."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from stream_worker.cameras.motion import MIN_WIDTH
from stream_worker.cameras.thumbnails import gray_thumbnail, jpeg_size


def jpeg(width: int, height: int, quality: int = 90) -> tuple[np.ndarray, bytes]:
    rng = np.random.default_rng(width * height)
    coarse = rng.integers(0, 255, size=(height // 8 + 1, width // 8 + 1, 3)).astype(np.uint8)
    image = cv2.resize(coarse, (width, height), interpolation=cv2.INTER_NEAREST)
    return image, cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])[1].tobytes()


@pytest.mark.parametrize(
    ("size", "expected"),
    [((1920, 1080), (135, 240)), ((1280, 960), (120, 160)), ((848, 624), (156, 212)), ((100, 50), (50, 100))],
)
def test_smallest_dct_scale_that_keeps_min_width(size, expected):
    _, data = jpeg(*size)
    gray = gray_thumbnail(data)
    assert gray is not None and gray.shape == expected and gray.dtype == np.uint8
    assert gray.shape[1] >= min(MIN_WIDTH, size[0])


def test_it_is_the_pictures_luma():
    image, data = jpeg(1920, 1080)
    gray = gray_thumbnail(data)
    expected = cv2.resize(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (240, 135), interpolation=cv2.INTER_AREA)
    assert gray is not None
    assert np.abs(gray.astype(int) - expected.astype(int)).mean() < 4


def test_damaged_jpeg_still_gives_a_picture_and_non_jpegs_none():
    _, data = jpeg(1920, 1080)
    assert gray_thumbnail(data[: len(data) // 2]) is not None  # the missing half comes out grey
    png = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))[1].tobytes()
    for bad in (b"", b"not a jpeg", data[:100], png):
        assert gray_thumbnail(bad) is None


def test_size_from_the_header():
    _, data = jpeg(848, 624)
    assert jpeg_size(data) == (848, 624)
    assert jpeg_size(b"not a jpeg") is None and jpeg_size(b"") is None
