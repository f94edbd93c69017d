"""The small grey copy of a JPEG frame that the motion gate looks at, without a full decode.

The worker receives JPEG bytes and must decide motion for far less than a full frame costs (the
issue's bound: a static frame at most 10% of one). libjpeg-turbo, through simplejpeg, decodes only
the luma plane and scales in the DCT (1/8 of 1920x1080 is 240x135): no chroma, no colour
conversion, an eighth of the inverse transforms. The Huffman decoding of every coefficient is
still paid, so a 1080p frame costs about half of a full decode (bench/motion.py --decode: ~2.9
CPU ms against ~5.5 for OpenCV's full colour decode; OpenCV's IMREAD_REDUCED_GRAYSCALE_8 and Pillow's
draft() cost the same within a few percent, but are 30-60 MB and 5 MB installs to simplejpeg's 1).
"""

from __future__ import annotations

import numpy as np
import simplejpeg

from stream_worker.cameras.motion import MIN_WIDTH


def gray_thumbnail(jpeg: bytes, min_width: int = MIN_WIDTH) -> np.ndarray | None:
    """The JPEG's luma at the smallest DCT scale (1/8 .. 1) that keeps `min_width` columns, as a
    (height, width) uint8 array; None when the bytes are not a JPEG libjpeg-turbo can decode. A
    damaged but readable frame (missing tail, bad marker) still gives its picture."""
    try:
        gray = simplejpeg.decode_jpeg(
            jpeg, colorspace="GRAY", min_width=min_width, min_height=1, strict=False
        )
    except (ValueError, TypeError):
        return None
    return gray[:, :, 0] if gray.ndim == 3 else gray


def jpeg_size(jpeg: bytes) -> tuple[int, int] | None:
    """(width, height) from the JPEG's header alone; None when it is not a readable JPEG header."""
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(jpeg)
    except (ValueError, TypeError):
        return None
    return int(width), int(height)
