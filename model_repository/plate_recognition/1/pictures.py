"""The plate's picture for people: the plate warped flat from its corners, as a small bounded JPEG.

Pure (numpy and OpenCV only, no Triton import), so unit tests load it directly. The warp is the
network input's (`frames.warp_plate`, same margins), but at a size a person can read: up to
`PICTURE_HEIGHT` pixels high with the plate's own aspect, from the decoded frame's pixels (a frame
over 1 MP is decoded at 1/2 scale or less, see `frames.plan_decode`), magnified at most
`PICTURE_MAX_UPSCALE` times (more only invents pixels). The JPEG is bounded by `PICTURE_MAX_BYTES`:
the quality, then the size, is lowered until it fits, so an event's size stays bounded whatever
the plate looks like.
"""

from __future__ import annotations

import cv2
import numpy as np
from frames import PLATE_HORIZONTAL_MARGIN, PLATE_VERTICAL_MARGIN, plate_extent, warp_plate_resampled

PICTURE_MAX_BYTES = 16 * 1024  # the contract's bound on a plate picture (PlateReading.image)
PICTURE_HEIGHT = 64  # pixels, plate and margins: characters ~30 px high, readable at a glance
PICTURE_MIN_HEIGHT = 16
PICTURE_MAX_UPSCALE = 4.0  # a plate 11 px high in the frame becomes at most 44 px (+ margins)
PICTURE_ASPECTS = (0.5, 8.0)  # width / height of the picture, clamped (degenerate corners)
QUALITIES = (90, 80, 70, 60, 50, 40, 30)  # tried in order until the JPEG fits
SHRINKS = (1.0, 0.75, 0.5)  # then smaller pictures, each at every quality


def picture_size(
    corners: np.ndarray,
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
) -> tuple[int, int]:
    """(width, height) of the picture of the plate with these corners (in the decoded frame's pixels):
    the plate's aspect with its margins, `PICTURE_HEIGHT` high at most, never magnified more than
    `PICTURE_MAX_UPSCALE` times unless that is under `PICTURE_MIN_HEIGHT`."""
    plate_w, plate_h = plate_extent(corners)
    crop_w, crop_h = plate_w * (1 + 2 * horizontal_margin), plate_h * (1 + 2 * vertical_margin)
    aspect = min(max(crop_w / crop_h, PICTURE_ASPECTS[0]), PICTURE_ASPECTS[1])
    height = min(PICTURE_HEIGHT, max(PICTURE_MIN_HEIGHT, round(crop_h * PICTURE_MAX_UPSCALE)))
    return max(1, round(height * aspect)), height


def plate_picture(
    image: np.ndarray,
    corners: np.ndarray,
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
) -> np.ndarray:
    """The plate warped flat at `picture_size`, uint8 like `image`. A plate larger than the picture is
    warped at its own size first and then area-averaged down (a direct cubic warp would alias)."""
    size = picture_size(corners, vertical_margin, horizontal_margin)
    return warp_plate_resampled(image, corners, size, vertical_margin, horizontal_margin)


def encode_bounded(picture: np.ndarray, max_bytes: int = PICTURE_MAX_BYTES) -> bytes:
    """`picture` as a JPEG of at most `max_bytes`: the best of `QUALITIES`, then of smaller sizes
    (`SHRINKS`), that fits; b"" when none does (a bounded number of tries, never an oversized JPEG)."""
    height, width = picture.shape[:2]
    for shrink in SHRINKS:
        size = (max(1, round(width * shrink)), max(1, round(height * shrink)))
        scaled = picture if shrink == 1.0 else cv2.resize(picture, size, interpolation=cv2.INTER_AREA)
        for quality in QUALITIES:
            ok, data = cv2.imencode(
                ".jpg", scaled, [cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_OPTIMIZE, 1]
            )
            if ok and len(data) <= max_bytes:
                return data.tobytes()
    return b""


def plate_jpeg(
    image: np.ndarray,
    corners: np.ndarray,
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
    max_bytes: int = PICTURE_MAX_BYTES,
) -> bytes:
    """The plate's picture as a bounded JPEG: `plate_picture` then `encode_bounded`."""
    return encode_bounded(plate_picture(image, corners, vertical_margin, horizontal_margin), max_bytes)
