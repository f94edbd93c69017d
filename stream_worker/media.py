"""OpenCV on demand: only the media tools need it (video input, annotated copies), not the worker.

The worker never decodes an image (Triton does), so its install and its container image leave
OpenCV out; the commands that do need it say which extra to install instead of failing on import.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

MEDIA_EXTRA_HINT = "pip install 'stream-worker[media]' (or opencv-python-headless<4.12)"


class MediaSupportMissing(RuntimeError):
    """OpenCV is not installed, and the requested feature needs it."""


def opencv(feature: str) -> ModuleType:
    """The `cv2` module, or a `MediaSupportMissing` that names `feature` and how to get it."""
    try:
        import cv2
    except ImportError as error:
        message = f"{feature} needs OpenCV, which is not installed: {MEDIA_EXTRA_HINT}"
        raise MediaSupportMissing(message) from error
    return cv2


JPEG_MAGIC = b"\xff\xd8\xff"
REENCODED_JPEG_QUALITY = 95  # near lossless for a plate's edges; the worker's frames come as JPEG


def as_jpeg(data: bytes, feature: str) -> bytes:
    """`data` itself when it is a JPEG; another image (a PNG crop) re-encoded as a JPEG, since Triton
    decodes JPEG only; unchanged when OpenCV cannot decode it either (Triton then says why)."""
    if data.startswith(JPEG_MAGIC):
        return data
    cv2 = opencv(feature)
    import numpy as np

    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return data
    encoded, buffer = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, REENCODED_JPEG_QUALITY])
    return buffer.tobytes() if encoded else data


VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm")


class MediaError(ValueError):
    """A file OpenCV cannot read or encode as asked; the message names it."""


def video_jpegs(path: Path, quality: int, feature: str) -> Iterator[bytes]:
    """Every frame of the video at `path`, in order, as a JPEG of `quality` (1-100)."""
    cv2 = opencv(feature)
    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise MediaError(f"{path}: OpenCV cannot open it as a video")
    try:
        while True:
            ok, image = capture.read()
            if not ok:
                return
            encoded, buffer = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
            if not encoded:
                raise MediaError(f"{path}: OpenCV could not JPEG-encode a frame")
            yield buffer.tobytes()
    finally:
        capture.release()
