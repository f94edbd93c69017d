"""Synthetic Russian-style plate crops, made from nothing but OpenCV's fonts and random numbers.

Calibration data for quantizing the recognizer: what a quantized graph's activation ranges are
measured on must look like what it reads (a white plate, dark characters, a border, a car around
it, blur, noise, JPEG), yet nothing derived from the evaluation photos may ship or be needed at
`models prepare` time. Each crop is cut as plate_recognition cuts one (the plate warped flat from
its four corners with 20% of its height above and below and 8% of its width on each side, 94x24,
(p - 127.5) / 128, channels first), so the network sees the same framing.
"""

from __future__ import annotations

import cv2
import numpy as np

WIDTH, HEIGHT = 94, 24
VERTICAL_MARGIN = 0.2
HORIZONTAL_MARGIN = 0.08
LETTERS = "ABEKMHOPCTYX"
DIGITS = "0123456789"
# The plate drawn at this size (pixels), about a Russian plate's 520x112 mm.
PLATE_W, PLATE_H = 260, 56
FONTS = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_PLAIN)


def _text(rng: np.random.Generator) -> tuple[str, str]:
    """(series and number, region code): the layout of a Russian private car's plate."""
    letter = lambda: LETTERS[rng.integers(len(LETTERS))]  # noqa: E731
    digit = lambda: DIGITS[rng.integers(len(DIGITS))]  # noqa: E731
    main = letter() + digit() + digit() + digit() + letter() + letter()
    region = "".join(digit() for _ in range(2 + int(rng.random() < 0.4)))
    return main, region


def _plate(rng: np.random.Generator) -> np.ndarray:
    """A flat plate, PLATE_W x PLATE_H, BGR uint8."""
    paper = int(rng.integers(170, 256))
    ink = int(rng.integers(0, 70))
    plate = np.full((PLATE_H, PLATE_W, 3), paper, np.uint8)
    plate = np.clip(plate.astype(np.int16) + rng.integers(-12, 13, size=3), 0, 255).astype(np.uint8)
    cv2.rectangle(plate, (1, 1), (PLATE_W - 2, PLATE_H - 2), (ink,) * 3, 2)
    split = int(PLATE_W * 0.76)
    cv2.line(plate, (split, 2), (split, PLATE_H - 3), (ink,) * 3, 2)
    main, region = _text(rng)
    font = FONTS[rng.integers(len(FONTS))]
    thickness = int(rng.integers(2, 5))
    (width, height), _ = cv2.getTextSize(main, font, 1.0, thickness)
    scale = min((split - 12) / width, (PLATE_H * 0.7) / height)
    (width, height), _ = cv2.getTextSize(main, font, scale, thickness)
    origin = ((split - width) // 2, (PLATE_H + height) // 2)
    cv2.putText(plate, main, origin, font, scale, (ink,) * 3, thickness, cv2.LINE_AA)
    (width, height), _ = cv2.getTextSize(region, font, 1.0, 2)
    scale = min((PLATE_W - split - 8) / width, (PLATE_H * 0.45) / height)
    (width, height), _ = cv2.getTextSize(region, font, scale, 2)
    origin = (split + (PLATE_W - split - width) // 2, int(PLATE_H * 0.05) + height + 2)
    cv2.putText(plate, region, origin, font, scale, (ink,) * 3, 2, cv2.LINE_AA)
    return plate


def _scene(rng: np.random.Generator, plate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plate pasted on a car-coloured, textured background, tilted: (image, its 4 corners)."""
    size = (PLATE_H * 4, PLATE_W * 2)
    body = rng.integers(0, 256, size=3)
    background = np.empty((*size, 3), np.uint8)
    background[:] = body
    shade = rng.normal(0, 30, (8, 16, 1)) + rng.normal(0, 8, (8, 16, 3))
    texture = cv2.resize(shade, (size[1], size[0]), interpolation=cv2.INTER_CUBIC)
    background = np.clip(background + texture, 0, 255).astype(np.uint8)
    centre = np.array([size[1] / 2, size[0] / 2]) + rng.normal(0, 6, 2)
    half = np.array([PLATE_W / 2, PLATE_H / 2])
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * half
    angle = np.deg2rad(rng.normal(0, 4))
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    corners = corners @ rotation.T + centre + rng.normal(0, 4, (4, 2))
    source = np.array([[0, 0], [PLATE_W, 0], [PLATE_W, PLATE_H], [0, PLATE_H]], np.float32)
    transform = cv2.getPerspectiveTransform(source, corners.astype(np.float32))
    warped = cv2.warpPerspective(plate, transform, (size[1], size[0]))
    mask = cv2.warpPerspective(np.full(plate.shape[:2], 255, np.uint8), transform, (size[1], size[0]))
    image = np.where(mask[..., None] > 127, warped, background)
    return image, corners.astype(np.float32)


def _crop(image: np.ndarray, corners: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The plate warped flat to 94x24 inset by the crop's margins, the detector's corners a little
    off (as a detector's are)."""
    plate_h = HEIGHT / (1 + 2 * VERTICAL_MARGIN)
    plate_w = WIDTH / (1 + 2 * HORIZONTAL_MARGIN)
    left, top = (WIDTH - plate_w) / 2, (HEIGHT - plate_h) / 2
    target = np.array(
        [[left, top], [left + plate_w, top], [left + plate_w, top + plate_h], [left, top + plate_h]],
        np.float32,
    )
    found = corners + rng.normal(0, 3, corners.shape).astype(np.float32)
    transform = cv2.getPerspectiveTransform(found, target)
    return cv2.warpPerspective(
        image, transform, (WIDTH, HEIGHT), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE
    )


def _degrade(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Lighting, blur, sensor noise and JPEG, as cameras deliver plates."""
    light = rng.uniform(0.35, 1.2)
    offset = rng.uniform(-30, 30)
    image = np.clip(image.astype(np.float32) * light + offset, 0, 255)
    sigma = rng.uniform(0, 2.0)
    if sigma > 0.3:
        image = cv2.GaussianBlur(image, (0, 0), sigma)
    image = np.clip(image + rng.normal(0, rng.uniform(0, 12), image.shape), 0, 255).astype(np.uint8)
    quality = int(rng.integers(20, 95))
    return cv2.imdecode(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], cv2.IMREAD_COLOR)


def synthetic_plate_crops(count: int, seed: int = 0) -> np.ndarray:
    """`count` network inputs [count, 3, 24, 94] float32, reproducible from `seed`."""
    rng = np.random.default_rng(seed)
    crops = np.empty((count, 3, HEIGHT, WIDTH), np.float32)
    for index in range(count):
        image, corners = _scene(rng, _plate(rng))
        # Scaled down first, as a camera sees a plate 60-250 pixels wide.
        factor = rng.uniform(0.25, 1.0)
        small = cv2.resize(image, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
        crop = _crop(_degrade(small, rng), corners * factor, rng)
        crops[index] = ((crop.astype(np.float32) - 127.5) * 0.0078125).transpose(2, 0, 1)
    return crops
