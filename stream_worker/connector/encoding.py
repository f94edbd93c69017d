"""JPEG encoding of a decoded frame at the camera's `jpeg_quality`.

OpenCV (libjpeg-turbo) when it is installed (the `media` extra), else FFmpeg's own mjpeg encoder
through PyAV. Measured on one 1080p frame, one thread (2-core VM, load ~2): OpenCV 7.7 CPU ms
(0.9 of it the conversion to BGR) for 304 KB at quality 90; PyAV's mjpeg 11.1 ms at qscale 2
(243 KB), 9.5 ms at qscale 3. OpenCV is the cheaper and maps the quality 1:1; the mjpeg fallback
maps it to a qscale that gives about the same size.
"""

from __future__ import annotations

import fractions
from typing import Any


def qscale_of(quality: int) -> int:
    """FFmpeg mjpeg qscale (1 best .. 31 worst) about as large as libjpeg's `quality` (1..100)."""
    return max(1, min(31, round(1 + (100 - quality) / 12.5)))


class JpegEncoder:
    def __init__(self, quality: int) -> None:
        self.quality = quality
        try:
            import cv2
        except ImportError:
            cv2 = None
        self._cv2: Any = cv2
        self._mjpeg: Any = None
        self._size: tuple[int, int] | None = None
        self.backend = "opencv" if cv2 is not None else "pyav-mjpeg"

    def encode(self, frame: Any) -> bytes:
        """`frame`: an av.VideoFrame."""
        if self._cv2 is not None:
            image = frame.to_ndarray(format="bgr24")
            ok, buffer = self._cv2.imencode(".jpg", image, [self._cv2.IMWRITE_JPEG_QUALITY, self.quality])
            if not ok:
                raise RuntimeError("OpenCV could not encode a frame as JPEG")
            return buffer.tobytes()
        return self._encode_mjpeg(frame)

    def _encode_mjpeg(self, frame: Any) -> bytes:
        import av

        size = (frame.width, frame.height)
        if self._mjpeg is None or self._size != size:
            context = av.CodecContext.create("mjpeg", "w")
            context.width, context.height = size
            context.pix_fmt = "yuvj420p"
            context.time_base = fractions.Fraction(1, 1000)
            context.thread_count = 1
            context.qmin = context.qmax = qscale_of(self.quality)
            context.open()
            self._mjpeg, self._size = context, size
        image = frame.reformat(format="yuvj420p")
        image.pts = None
        packets = self._mjpeg.encode(image)
        if not packets:
            raise RuntimeError("the mjpeg encoder gave no packet for a frame")
        return b"".join(bytes(packet) for packet in packets)
