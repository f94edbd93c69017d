"""Hostile frames for `bench chaos`: one generator per kind, each with the outcome it must have.

A kind is labelled with what the pipeline must make of it, decided by sending it through the
real pipeline once and reading the code that decides (the worker's validate.py, Triton's
plate_recognition frames.py and model.py):
- a dead letter with a given reason: the worker's own checks (empty_frame, missing_camera_id,
  invalid_header) or Triton's (invalid_image: not a JPEG, no or an empty frame header, more
  pixels than max_pixels, more decoded memory than the budget, data libjpeg cannot decode);
- an event: hostile but decodable (progressive, arithmetic-coded, CMYK, bit-flipped scan data,
  a flat image at max_pixels, a small frame declaring that size, no headers but a key). They
  count as valid frames: each needs its event, and none may crash anything.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import cv2
import numpy as np

from bench import jpegs
from stream_worker.contracts import ErrorReason, FrameHeader

EVENT = "event"
# plate_recognition's limits (model_repository/plate_recognition/config.pbtxt): max_pixels is 8K UHD.
MAX_PIXELS = 7680 * 4320
NEAR_LIMIT_SIDE = 5760  # 5760 x 5760 = max_pixels exactly: ~0.5 MB of JPEG, 95 MiB decoded
OVER_LIMIT_SIDE = 6000  # the 563 KB frame that decodes to 108 MB
FLAT_COLOUR = (40, 120, 200)
SMALL_SIDE = (64, 48)


@dataclass(frozen=True)
class Expected:
    """An event, or a dead letter with this reason."""

    reason: ErrorReason | None = None

    @property
    def event(self) -> bool:
        return self.reason is None

    def __str__(self) -> str:
        return EVENT if self.reason is None else f"dead letter {self.reason.value}"


@dataclass(frozen=True)
class Record:
    """What to publish: value, key and headers (None: the camera's usual ones)."""

    value: bytes | None
    key: bytes | None = b""  # b"": the camera's key
    headers: list[tuple[str, bytes]] | None = None


@dataclass
class Material:
    """What the generators start from: the run's valid frames (JPEG bytes), made from the samples.
    The large flat frames are encoded once, when first needed (about a second each)."""

    frames: Sequence[bytes]
    _cache: dict[str, bytes] = field(default_factory=dict)

    @cached_property
    def image(self) -> np.ndarray:
        image = cv2.imdecode(np.frombuffer(self.frames[0], np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError("the first valid frame does not decode")
        return image

    def encoded(self, extension: str, image: np.ndarray | None = None, *params: int) -> bytes:
        ok, buffer = cv2.imencode(extension, self.image if image is None else image, list(params))
        if not ok:
            raise RuntimeError(f"OpenCV could not encode {extension}")
        return buffer.tobytes()

    def flat(self, side: int, progressive: bool) -> bytes:
        name = f"{side}-{progressive}"
        if name not in self._cache:
            image = np.full((side, side, 3), FLAT_COLOUR, np.uint8)
            params = (cv2.IMWRITE_JPEG_QUALITY, 85, cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive))
            self._cache[name] = self.encoded(".jpg", image, *params)
        return self._cache[name]


def sof_position(jpeg: bytes) -> int:
    """Where the Start-Of-Frame segment's marker is (the first SOFn)."""
    position = 2
    while position + 4 <= len(jpeg):
        marker = jpeg[position + 1]
        if marker in range(0xC0, 0xD0) and marker not in (0xC4, 0xC8, 0xCC):
            return position
        position += 2 + int.from_bytes(jpeg[position + 2 : position + 4], "big")
    raise ValueError("no SOF segment")


def with_declared_size(jpeg: bytes, width: int, height: int) -> bytes:
    """The same JPEG with another size written in its frame header."""
    at = sof_position(jpeg) + 5
    return jpeg[:at] + struct.pack(">HH", height, width) + jpeg[at + 4 :]


def scan_start(jpeg: bytes) -> int:
    """The first byte of entropy-coded data (after the first SOS segment)."""
    at = jpeg.index(b"\xff\xda")
    return at + 2 + int.from_bytes(jpeg[at + 2 : at + 4], "big")


def decodes(jpeg: bytes) -> bool:
    """Whether OpenCV (the build Triton's Python models run) decodes it, as plate_recognition does.
    libjpeg's warnings about the corrupt data go to stderr: kept out of the benchmark's output."""
    flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
    with _stderr_silenced():
        return cv2.imdecode(np.frombuffer(jpeg, np.uint8), flags) is not None


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def truncated(rng: random.Random, material: Material) -> Record:
    """Cut anywhere after the frame header: libjpeg's "premature end" is an error in OpenCV 4.11."""
    jpeg = rng.choice(material.frames)
    return Record(jpeg[: rng.randrange(sof_position(jpeg) + 2, len(jpeg) - 2)])


def bit_flipped(rng: random.Random, material: Material) -> Record:
    """1 to 64 bits flipped in the scan data: libjpeg warns and decodes garbage. (Flips in the
    headers would make the outcome a matter of chance; the kinds below cover broken headers.)
    Drawn again in the rare case that OpenCV refuses the result, so the expected outcome holds."""
    for _ in range(100):
        jpeg = bytearray(rng.choice(material.frames))
        start = scan_start(jpeg)
        for _ in range(rng.choice((1, 4, 16, 64))):
            jpeg[rng.randrange(start, len(jpeg) - 2)] ^= 1 << rng.randrange(8)
        if decodes(bytes(jpeg)):
            return Record(bytes(jpeg))
    raise RuntimeError("no decodable bit-flipped frame in 100 draws")


def progressive(rng: random.Random, material: Material) -> Record:
    quality = rng.choice((60, 85, 95))
    return Record(
        material.encoded(".jpg", None, cv2.IMWRITE_JPEG_QUALITY, quality, cv2.IMWRITE_JPEG_PROGRESSIVE, 1)
    )


def arithmetic(rng: random.Random, material: Material) -> Record:
    return Record(jpegs.flat_arithmetic(640, 360, rng.randrange(256)))


def cmyk(rng: random.Random, material: Material) -> Record:
    return Record(jpegs.flat_cmyk(640, 360, [rng.randrange(256) for _ in range(4)]))


def twelve_bit(rng: random.Random, material: Material) -> Record:
    """12-bit samples (SOF1): libjpeg-turbo 3 decodes them only through its 12-bit API, which
    OpenCV 4.11 does not call."""
    return Record(jpegs.flat_huffman(640, 360, [rng.randrange(4096)], 12, jpegs.SOF_EXTENDED))


def lossless(rng: random.Random, material: Material) -> Record:
    """Lossless (SOF3) greyscale: libjpeg-turbo refuses the colour conversion OpenCV asks for."""
    return Record(jpegs.flat_lossless(*SMALL_SIDE, rng.randrange(256)))


def zero_size(rng: random.Random, material: Material) -> Record:
    width, height = rng.choice(((0, 360), (640, 0), (0, 0)))
    return Record(with_declared_size(rng.choice(material.frames), width, height))


def huge_declared(rng: random.Random, material: Material) -> Record:
    """A small frame whose header declares up to 65535x65535: over max_pixels, refused from the header."""
    width, height = rng.choice(((65535, 65535), (65535, 600), (8000, 4320)))
    return Record(with_declared_size(rng.choice(material.frames), width, height))


def declared_near_limit(rng: random.Random, material: Material) -> Record:
    """A small frame whose header declares 5760x5760: allowed, decoded at 1/4 scale; its scan data
    ends early at its end-of-image marker, which libjpeg only warns about (the rest is grey)."""
    return Record(with_declared_size(rng.choice(material.frames), NEAR_LIMIT_SIDE, NEAR_LIMIT_SIDE))


def flat_near_limit(rng: random.Random, material: Material) -> Record:
    """5760x5760 of one colour: 0.5 MB, max_pixels exactly; decoded at 1/4 scale within budget."""
    return Record(material.flat(NEAR_LIMIT_SIDE, progressive=False))


def flat_over_limit(rng: random.Random, material: Material) -> Record:
    return Record(material.flat(OVER_LIMIT_SIDE, progressive=False))


def flat_progressive_near_limit(rng: random.Random, material: Material) -> Record:
    """Progressive, libjpeg holds every coefficient of the whole image (196 MiB): over the
    decoded-memory budget, refused before decoding."""
    return Record(material.flat(NEAR_LIMIT_SIDE, progressive=True))


def png(rng: random.Random, material: Material) -> Record:
    return Record(material.encoded(".png"))


def webp(rng: random.Random, material: Material) -> Record:
    return Record(material.encoded(".webp"))


def gif(rng: random.Random, material: Material) -> Record:
    """A 1x1 GIF89a (OpenCV 4.11 has no GIF encoder here)."""
    colour = bytes(rng.randrange(256) for _ in range(3))
    header = b"GIF89a" + struct.pack("<HHBBB", 1, 1, 0x80, 0, 0) + colour + b"\x00\x00\x00"
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x44\x01\x00"
    return Record(header + image + b"\x3b")


def random_bytes(rng: random.Random, material: Material) -> Record:
    size = rng.choice((1, 3, 100, 10_000, 200_000))
    data = bytearray(rng.randbytes(size))
    data[0] = rng.randrange(0xFF)  # never the JPEG magic
    return Record(bytes(data))


def jpeg_magic_then_random(rng: random.Random, material: Material) -> Record:
    return Record(b"\xff\xd8\xff" + rng.randbytes(rng.choice((1, 100, 10_000))))


def empty_value(rng: random.Random, material: Material) -> Record:
    return Record(b"")


def null_value(rng: random.Random, material: Material) -> Record:
    return Record(None)


def no_headers_no_key(rng: random.Random, material: Material) -> Record:
    return Record(rng.choice(material.frames), key=None, headers=[])


def no_headers(rng: random.Random, material: Material) -> Record:
    """Only the key: the camera id falls back to it, the frame id to topic:partition:offset."""
    return Record(rng.choice(material.frames), headers=[])


def malformed_captured_at(rng: random.Random, material: Material) -> Record:
    text = rng.choice((b"yesterday", b"2025-02-30T12:00:00", b"12:00", b"\xff\xfe", b"1e99"))
    return Record(rng.choice(material.frames), headers=[(FrameHeader.CAPTURED_AT.value, text)])


def malformed_camera_id(rng: random.Random, material: Material) -> Record:
    """Not UTF-8 (the key would do, but a header that is there and unreadable is refused)."""
    return Record(rng.choice(material.frames), headers=[(FrameHeader.CAMERA_ID.value, b"\xc3\x28cam")])


@dataclass(frozen=True)
class Kind:
    name: str
    expected: Expected
    make: Callable[[random.Random, Material], Record]


INVALID_IMAGE = Expected(ErrorReason.INVALID_IMAGE)
KINDS: tuple[Kind, ...] = (
    Kind("truncated", INVALID_IMAGE, truncated),
    Kind("bit_flipped", Expected(), bit_flipped),
    Kind("progressive", Expected(), progressive),
    Kind("arithmetic", Expected(), arithmetic),
    Kind("cmyk", Expected(), cmyk),
    Kind("twelve_bit", INVALID_IMAGE, twelve_bit),
    Kind("lossless", INVALID_IMAGE, lossless),
    Kind("zero_size", INVALID_IMAGE, zero_size),
    Kind("huge_declared", INVALID_IMAGE, huge_declared),
    Kind("declared_near_limit", Expected(), declared_near_limit),
    Kind("flat_near_limit", Expected(), flat_near_limit),
    Kind("flat_over_limit", INVALID_IMAGE, flat_over_limit),
    Kind("flat_progressive_near_limit", INVALID_IMAGE, flat_progressive_near_limit),
    Kind("png", INVALID_IMAGE, png),
    Kind("gif", INVALID_IMAGE, gif),
    Kind("webp", INVALID_IMAGE, webp),
    Kind("random_bytes", INVALID_IMAGE, random_bytes),
    Kind("jpeg_magic_then_random", INVALID_IMAGE, jpeg_magic_then_random),
    Kind("empty_value", Expected(ErrorReason.EMPTY_FRAME), empty_value),
    Kind("null_value", Expected(ErrorReason.EMPTY_FRAME), null_value),
    Kind("no_headers_no_key", Expected(ErrorReason.MISSING_CAMERA_ID), no_headers_no_key),
    Kind("no_headers", Expected(), no_headers),
    Kind("malformed_captured_at", Expected(ErrorReason.INVALID_HEADER), malformed_captured_at),
    Kind("malformed_camera_id", Expected(ErrorReason.INVALID_HEADER), malformed_camera_id),
)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def pick_kinds(count: int, names: Sequence[str] | None = None) -> list[Kind]:
    """`count` kinds in turn (every kind as often as the others, give or take one)."""
    kinds = [KINDS_BY_NAME[name] for name in names] if names else list(KINDS)
    return [kinds[index % len(kinds)] for index in range(count)]
