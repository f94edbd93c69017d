import av
import numpy as np
import pytest

from stream_worker.connector.encoding import JpegEncoder, qscale_of


def frame(width: int = 320, height: int = 240) -> av.VideoFrame:
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[:, : width // 2] = (40, 120, 200)
    image[height // 3 :, :] += np.arange(width, dtype=np.uint8)[None, :, None] // 2
    return av.VideoFrame.from_ndarray(image, format="bgr24").reformat(format="yuv420p")


def test_quality_maps_to_a_qscale_in_range():
    assert qscale_of(100) == 1 and qscale_of(90) == 2 and qscale_of(1) == 9
    assert all(1 <= qscale_of(q) <= 31 for q in range(1, 101))


@pytest.mark.parametrize("backend", ["default", "pyav-mjpeg"])
def test_frames_come_out_as_jpeg_of_their_size(backend):
    encoder = JpegEncoder(90)
    if backend == "pyav-mjpeg":
        encoder._cv2 = None  # the fallback an install without OpenCV takes
    for size in [(320, 240), (640, 360)]:
        jpeg = encoder.encode(frame(*size))
        assert jpeg[:2] == b"\xff\xd8" and jpeg[-2:] == b"\xff\xd9"
        decoded = next(av.open(__import__("io").BytesIO(jpeg), format="mjpeg").decode(video=0))
        assert (decoded.width, decoded.height) == size


def test_lower_quality_is_smaller():
    big, small = JpegEncoder(95).encode(frame()), JpegEncoder(30).encode(frame())
    assert len(small) < len(big)
