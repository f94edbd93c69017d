"""Pure pre- and post-processing of `plate_recognition`: no Triton import, so unit tests load it directly.

Only numpy, OpenCV and simplejpeg: the production Triton image has neither the stream_worker package
nor torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import simplejpeg

JPEG_MAGIC = b"\xff\xd8\xff"
# Start-Of-Frame markers carry the image size: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field: TEM, RSTn, SOI, EOI.
STANDALONE_MARKERS = frozenset({0x01, *range(0xD0, 0xDA)})
START_OF_SCAN = 0xDA
# Progressive SOF markers (SOF2, SOF6, SOF10, SOF14): libjpeg buffers the whole image's coefficients.
PROGRESSIVE_SOF_MARKERS = frozenset({0xC2, 0xC6, 0xCA, 0xCE})
# Decoding at 1/n scale, by reduction n, in the order tried.
REDUCED_READS = {
    1: cv2.IMREAD_COLOR,
    2: cv2.IMREAD_REDUCED_COLOR_2,
    4: cv2.IMREAD_REDUCED_COLOR_4,
    8: cv2.IMREAD_REDUCED_COLOR_8,
}

# What config.pbtxt sets; used where it is silent. Frames over 8K UHD are refused from their header;
# over 1 MP they are decoded at 1/2, 1/4 or 1/8 scale (a 1080p frame at 960x540: see config.pbtxt).
DEFAULT_MAX_PIXELS = 33_177_600  # 7680x4320
DEFAULT_MAX_DECODED_PIXELS = 1_048_576  # 1024x1024

PLATE_WIDTH, PLATE_HEIGHT = 94, 24
# Margins around the plate in the crop, as fractions of its height (above and below) and width (each
# side). 20% vertically is how the checkpoints were trained; 8% horizontally read the most texts
# exactly on ../shared/evalset/scenes (57 of 61, against 52 with none; 56-57 for 10-25% vertically).
PLATE_VERTICAL_MARGIN = 0.2
PLATE_HORIZONTAL_MARGIN = 0.08
# global_ocr's input: the plate warped flat to 128x64, RGB uint8 (the graph scales by 1/255 itself).
GLOBAL_WIDTH, GLOBAL_HEIGHT = 128, 64
# Its crop's margins around the detector's corners (fractions of the plate's height and width). Its
# exact reads (argmax), from the corners plate_recognition finds, over vertical 0-0.3 x horizontal
# 0-0.12: ../shared/evalset/scenes (Russian, 59 plates with text) 18-33, 33 here, 28 at 0.1/0.04;
# plates-world us-crops 10-22 of 251 (22 here; the detector finds few plates in such tight crops)
# and ar-crops 61-74 of 147 (72 here).
GLOBAL_VERTICAL_MARGIN = 0.15
GLOBAL_HORIZONTAL_MARGIN = 0.12
# A frame that is itself a plate crop (`frame_is_plate`) is cut tight to the plate's edges: warped
# with these margins (the crop's border repeated around it) it reads as the CCT was trained. Read
# through their own region's formats, in-process as the BLS cuts them (JPEG q95), over vertical
# 0-0.2 x horizontal 0-0.12: us-crops 216/251 with none (argmax 211), 231-233 for 0.10-0.15 x
# 0.03-0.05 (231 here, argmax 222), ar-crops 137/147 with none, 138-140 there (139 here).
WHOLE_GLOBAL_VERTICAL_MARGIN = 0.10
WHOLE_GLOBAL_HORIZONTAL_MARGIN = 0.05
VOCABULARY = "0123456789ABEKMHOPCTYX"
CTC_BLANK = len(VOCABULARY)  # class 22


class InvalidImage(ValueError):
    """The frame cannot be used; the message becomes `invalid_image: <message>`."""


@dataclass(frozen=True, slots=True)
class JpegHeader:
    """What the Start-Of-Frame header declares, read before any pixel is decoded."""

    width: int
    height: int
    components: int
    progressive: bool


def jpeg_header(data: bytes) -> JpegHeader:
    """The JPEG's Start-Of-Frame header, reading markers only, never pixels."""
    if not data:
        raise InvalidImage("empty frame")
    if not data.startswith(JPEG_MAGIC):
        raise InvalidImage("not a JPEG (missing FFD8FF magic)")
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            raise InvalidImage(f"corrupt JPEG marker at byte {position}")
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte before a marker
            position += 1
            continue
        if marker in STANDALONE_MARKERS:
            position += 2
            continue
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        if length < 2:
            raise InvalidImage(f"corrupt JPEG segment length at byte {position}")
        if marker in SOF_MARKERS:
            if position + 10 > len(data):
                break
            height = int.from_bytes(data[position + 5 : position + 7], "big")
            width = int.from_bytes(data[position + 7 : position + 9], "big")
            if width == 0 or height == 0:
                raise InvalidImage(f"JPEG header declares an empty image ({width}x{height})")
            components = max(1, data[position + 9])
            return JpegHeader(width, height, components, marker in PROGRESSIVE_SOF_MARKERS)
        if marker == START_OF_SCAN:
            break
        position += 2 + length
    raise InvalidImage("JPEG has no frame header (SOF) before its image data")


@dataclass(frozen=True, slots=True)
class DecodePlan:
    """How a frame will be decoded: at 1/`reduction` of its size (libjpeg's DCT scaling)."""

    header: JpegHeader
    reduction: int

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the decoded image."""
        return -(-self.header.width // self.reduction), -(-self.header.height // self.reduction)

    @property
    def memory_bytes(self) -> int:
        """Memory the decode holds: the BGR pixels, plus, for a progressive JPEG, libjpeg's buffer of
        every DCT coefficient of the whole image (2 bytes per pixel and component, at full size)."""
        width, height = self.size
        coefficients = 2 * self.header.width * self.header.height * self.header.components
        return 3 * width * height + (coefficients if self.header.progressive else 0)


def plan_decode(data: bytes, max_pixels: int, max_decoded_pixels: int) -> DecodePlan:
    """Rejects images over `max_pixels` from the header alone; larger than `max_decoded_pixels`, they
    are decoded at 1/2, 1/4 or 1/8 scale (the smallest reduction that fits), which libjpeg does while
    decoding, at a fraction of the memory and time of a full decode."""
    header = jpeg_header(data)
    if header.width * header.height > max_pixels:
        raise InvalidImage(f"{header.width}x{header.height} exceeds max_pixels={max_pixels}")
    for reduction in REDUCED_READS:
        plan = DecodePlan(header, reduction)
        if plan.size[0] * plan.size[1] <= max_decoded_pixels:
            return plan
    return plan


def decode_planned(data: bytes, plan: DecodePlan) -> np.ndarray:
    """BGR uint8 image of `plan.size`. EXIF orientation is ignored so that boxes refer to the stored
    pixel grid the header describes.

    libjpeg-turbo's TurboJPEG API (simplejpeg) decodes first: the same pixels as OpenCV's decode
    (800 of 800 decodes of ../shared's 191 JPEGs and 9 video frames at 1, 1/2, 1/4 and 1/8; grey
    and CMYK JPEGs too), at 0.92x its CPU for a 1080p frame at 1/2. What TurboJPEG refuses (a
    subsampling it does not know, a corruption it reports strictly) goes to OpenCV, as before.
    """
    image = _turbo_decode(data, plan)
    if image is None:
        flags = REDUCED_READS[plan.reduction] | cv2.IMREAD_IGNORE_ORIENTATION
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), flags)
    if image is None:
        raise InvalidImage(f"JPEG ({plan.header.width}x{plan.header.height}) could not be decoded")
    return image


def _turbo_decode(data: bytes, plan: DecodePlan) -> np.ndarray | None:
    """The image at `plan.size` through TurboJPEG, or None where it declines or decodes another size."""
    width, height = plan.size
    try:
        image = simplejpeg.decode_jpeg(data, colorspace="BGR", min_width=width, min_height=height)
    except ValueError:
        return None
    return image if image.shape == (height, width, 3) else None


def decode_jpeg(data: bytes, max_pixels: int) -> np.ndarray:
    """The whole image at full size (BGR uint8), rejecting oversized images from the header first."""
    return decode_planned(data, plan_decode(data, max_pixels, max_decoded_pixels=max_pixels))


def warp_plate(
    image: np.ndarray,
    corners: np.ndarray,
    size: tuple[int, int],
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
) -> np.ndarray:
    """The plate warped flat into a `size` (width, height) uint8 image, inset by the margins.

    The four corners (top-left, top-right, bottom-right, bottom-left) are mapped onto the image
    inset by the margins (fractions of the plate's height and width on each side), so a tilted or
    skewed plate comes out upright. Pixels outside the frame repeat its border. One warp for the
    network input and the plate's picture (pictures.py), so both show the same plate.
    """
    width, height = size
    plate_h = height / (1 + 2 * vertical_margin)
    plate_w = width / (1 + 2 * horizontal_margin)
    left, top = (width - plate_w) / 2, (height - plate_h) / 2
    target = np.array(
        [[left, top], [left + plate_w, top], [left + plate_w, top + plate_h], [left, top + plate_h]],
        np.float32,
    )
    transform = cv2.getPerspectiveTransform(np.asarray(corners, np.float32).reshape(4, 2), target)
    return cv2.warpPerspective(
        image, transform, (width, height), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE
    )


def _edge(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.hypot(*(np.asarray(b, np.float64) - np.asarray(a, np.float64))))


def plate_extent(corners: np.ndarray) -> tuple[float, float]:
    """(width, height) of the plate with these corners, in pixels: the mean of opposite edges."""
    tl, tr, br, bl = np.asarray(corners, np.float64).reshape(4, 2)
    return max(1.0, (_edge(tl, tr) + _edge(bl, br)) / 2), max(1.0, (_edge(tl, bl) + _edge(tr, br)) / 2)


def warp_plate_resampled(
    image: np.ndarray,
    corners: np.ndarray,
    size: tuple[int, int],
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
) -> np.ndarray:
    """`warp_plate`, except that a plate much larger than `size` is warped at its own size first and
    then area-averaged down (a direct cubic warp would alias it)."""
    width, height = size
    own_h = plate_extent(corners)[1] * (1 + 2 * vertical_margin)
    if own_h <= 1.5 * height:
        return warp_plate(image, corners, (width, height), vertical_margin, horizontal_margin)
    factor = min(own_h / height, 4.0)  # bounded: the intermediate is at most 4x the target
    native = (max(1, math.ceil(width * factor)), max(1, math.ceil(height * factor)))
    large = warp_plate(image, corners, native, vertical_margin, horizontal_margin)
    return cv2.resize(large, (width, height), interpolation=cv2.INTER_AREA)


def global_crop(
    image: np.ndarray, corners: np.ndarray, vertical_margin: float, horizontal_margin: float
) -> np.ndarray:
    """global_ocr's input [64, 128, 3] uint8 RGB: the plate warped flat from its corners, with these
    margins, stretched to 128x64 whatever its aspect (as fast-plate-ocr resizes its crops)."""
    crop = warp_plate_resampled(
        image, corners, (GLOBAL_WIDTH, GLOBAL_HEIGHT), vertical_margin, horizontal_margin
    )
    return cv2.cvtColor(crop, cv2.COLOR_BGR2RGB)


def image_corners(width: int, height: int) -> np.ndarray:
    """The corners of a whole `width` x `height` image, for a frame that is itself a plate crop."""
    return np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)


def plate_tensor(
    image: np.ndarray,
    corners: np.ndarray,
    vertical_margin: float = PLATE_VERTICAL_MARGIN,
    horizontal_margin: float = PLATE_HORIZONTAL_MARGIN,
) -> np.ndarray:
    """One network input [3, 24, 94] float32: the plate warped flat (`warp_plate`) onto the 94x24
    input, (p - 127.5) / 128, channels first, so a tilted or skewed plate reaches LPRNet upright."""
    crop = warp_plate(image, corners, (PLATE_WIDTH, PLATE_HEIGHT), vertical_margin, horizontal_margin)
    return ((crop.astype(np.float32) - 127.5) * 0.0078125).transpose(2, 0, 1)


def softmax(logits: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def ctc_greedy_decode(logits: np.ndarray) -> tuple[str, list[float]]:
    """Text and per-character confidence from one plate's logits [23 classes, T time steps].

    Greedy CTC: argmax per step, collapse repeats, drop blanks. A character's confidence is the
    highest softmax probability among the consecutive time steps that produced it.
    """
    probabilities = softmax(logits.astype(np.float64), axis=0)
    best = probabilities.argmax(axis=0)
    text: list[str] = []
    confidences: list[float] = []
    previous = CTC_BLANK
    for step, label in enumerate(best):
        label = int(label)
        if label != CTC_BLANK:
            if label != previous:
                text.append(VOCABULARY[label])
                confidences.append(float(probabilities[label, step]))
            else:
                confidences[-1] = max(confidences[-1], float(probabilities[label, step]))
        previous = label
    return "".join(text), confidences


def plate_confidence(character_confidences: list[float]) -> float:
    """The plate is only as sure as its least sure character: min of the per-character confidences."""
    return min(character_confidences) if character_confidences else 0.0
