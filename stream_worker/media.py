"""OpenCV on demand: only the media tools need it (video input, annotated copies), not the worker.

The worker never decodes an image (Triton does), so its install and its container image leave
OpenCV out; the commands that do need it say which extra to install instead of failing on import.
"""

from __future__ import annotations

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
