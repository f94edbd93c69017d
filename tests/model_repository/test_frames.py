"""JPEG header checks, plate cropping and CTC decoding of plate_recognition (pure helpers)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

VOCABULARY = "0123456789ABEKMHOPCTYX"
BLANK = 22


def _jpeg(width: int, height: int, progressive: bool = False) -> bytes:
    image = np.random.default_rng(0).integers(0, 255, (height, width, 3), dtype=np.uint8)
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)])
    assert ok
    return data.tobytes()


def declared_jpeg(width: int, height: int, size: int = 300) -> bytes:
    """A JPEG whose SOF header declares width x height but carries no real image data."""
    app0 = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big") + width.to_bytes(2, "big")
    sof0 += b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    data = b"\xff\xd8" + app0 + sof0
    return data + b"\x00" * (size - len(data))


def dimensions(frames, data: bytes) -> tuple[int, int]:
    header = frames.jpeg_header(data)
    return header.width, header.height


@pytest.mark.parametrize("progressive", [False, True])
def test_the_frame_header_gives_size_components_and_progressive(frames, progressive: bool) -> None:
    assert frames.jpeg_header(_jpeg(37, 11, progressive)) == frames.JpegHeader(37, 11, 3, progressive)


def test_dimensions_of_the_sample_photo(frames, car_jpeg: bytes) -> None:
    assert dimensions(frames, car_jpeg) == (780, 439)


def test_fill_bytes_between_segments_are_skipped(frames) -> None:
    data = _jpeg(20, 10)
    assert dimensions(frames, data[:2] + b"\xff\xff" + data[2:]) == (20, 10)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty frame"),
        (b"not a jpeg", "not a JPEG"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not a JPEG"),
        (b"\xff\xd8\xff", "no frame header"),
        (b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 20, "no frame header"),
        (b"\xff\xd8\xff\xe0\x00\x01", "segment length"),
        (b"\xff\xd8\xff\xe0\x00\x04\x00\x00\x12\x34\x00\x00", "corrupt JPEG marker"),
    ],
)
def test_malformed_headers_are_rejected_with_a_reason(frames, data: bytes, reason: str) -> None:
    with pytest.raises(frames.InvalidImage, match=reason):
        frames.jpeg_header(data)


def test_a_huge_declared_image_is_rejected_before_decoding(frames) -> None:
    data = declared_jpeg(60000, 60000)
    assert len(data) == 300
    assert dimensions(frames, data) == (60000, 60000)
    with pytest.raises(frames.InvalidImage, match="60000x60000 exceeds max_pixels=40000000"):
        frames.decode_jpeg(data, max_pixels=40_000_000)


def test_a_valid_header_with_broken_data_fails_decoding_not_the_caller(frames) -> None:
    with pytest.raises(frames.InvalidImage, match="could not be decoded"):
        frames.decode_jpeg(declared_jpeg(64, 32), max_pixels=40_000_000)


def test_decode_returns_the_bgr_image(frames) -> None:
    image = frames.decode_jpeg(_jpeg(40, 30), max_pixels=40_000_000)
    assert image.shape == (30, 40, 3) and image.dtype == np.uint8


@pytest.mark.parametrize(
    ("width", "height", "reduction"),
    [
        (2048, 2048, 1),
        (2049, 2048, 2),
        (3840, 2160, 2),
        (5760, 5760, 4),
        (16000, 12000, 8),
        (60000, 2000, 8),
        (40000, 40000, 8),
    ],
)
def test_frames_over_max_decoded_pixels_are_decoded_at_the_smallest_reduction_that_fits(
    frames, width: int, height: int, reduction: int
) -> None:
    plan = frames.plan_decode(declared_jpeg(width, height), 10**10, max_decoded_pixels=2048 * 2048)
    assert plan.reduction == reduction
    assert plan.size == (-(-width // reduction), -(-height // reduction))


def test_decode_memory_counts_pixels_and_a_progressive_jpegs_coefficients(frames) -> None:
    baseline = frames.plan_decode(_jpeg(64, 48), 10**9, 10**9)
    progressive = frames.plan_decode(_jpeg(64, 48, progressive=True), 10**9, 10**9)
    assert baseline.memory_bytes == 64 * 48 * 3
    assert progressive.memory_bytes == 64 * 48 * 3 + 2 * 64 * 48 * 3


def test_a_reduced_decode_has_the_planned_size(frames) -> None:
    data = _jpeg(401, 203)
    plan = frames.plan_decode(data, 10**9, max_decoded_pixels=150 * 80)
    assert plan.reduction == 4
    assert frames.decode_planned(data, plan).shape == (51, 101, 3)


@pytest.mark.parametrize("reduction", [1, 2, 4, 8])
def test_turbojpeg_decodes_opencvs_pixels_at_every_reduction(frames, car_jpeg: bytes, reduction: int) -> None:
    plan = frames.DecodePlan(frames.jpeg_header(car_jpeg), reduction)
    flags = frames.REDUCED_READS[reduction] | cv2.IMREAD_IGNORE_ORIENTATION
    expected = cv2.imdecode(np.frombuffer(car_jpeg, np.uint8), flags)
    assert frames._turbo_decode(car_jpeg, plan) is not None
    np.testing.assert_array_equal(frames.decode_planned(car_jpeg, plan), expected)


def test_a_jpeg_turbojpeg_declines_is_decoded_by_opencv(frames, car_jpeg: bytes, monkeypatch) -> None:
    def declines(*_args: object, **_kwargs: object) -> None:
        raise ValueError("tjDecompressHeader3(): Could not determine subsampling level of JPEG image")

    plan = frames.DecodePlan(frames.jpeg_header(car_jpeg), 2)
    expected = frames.decode_planned(car_jpeg, plan)
    monkeypatch.setattr(frames.simplejpeg, "decode_jpeg", declines)
    np.testing.assert_array_equal(frames.decode_planned(car_jpeg, plan), expected)


def test_a_truncated_jpeg_is_refused_by_both_decoders(frames) -> None:
    data = _jpeg(64, 48)
    truncated = data[: len(data) * 2 // 3]
    plan = frames.plan_decode(truncated, 10**9, 10**9)
    assert frames._turbo_decode(truncated, plan) is None
    with pytest.raises(frames.InvalidImage, match="could not be decoded"):
        frames.decode_planned(truncated, plan)


def _corners(x1: float, y1: float, x2: float, y2: float) -> np.ndarray:
    return np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)


def test_plate_tensor_is_normalised_channels_first(frames) -> None:
    image = np.zeros((50, 80, 3), np.uint8)
    image[..., 2] = 255
    tensor = frames.plate_tensor(image, _corners(10, 10, 60, 30))
    assert tensor.shape == (3, 24, 94) and tensor.dtype == np.float32
    np.testing.assert_allclose(tensor[0], -0.99609375)
    np.testing.assert_allclose(tensor[2], 0.99609375)


def test_the_plate_lands_inside_the_margins(frames) -> None:
    """A white plate on black: white exactly where the margins say, black around it."""
    image = np.zeros((200, 400, 3), np.uint8)
    image[80:120, 100:300] = 255
    tensor = frames.plate_tensor(
        image, _corners(100, 80, 300, 120), vertical_margin=0.2, horizontal_margin=0.1
    )
    white = tensor[0] > 0
    rows, columns = np.flatnonzero(white.any(axis=1)), np.flatnonzero(white.any(axis=0))
    # plate height 24 / 1.4 = 17.1 px centred -> rows 3..20; width 94 / 1.2 = 78.3 px -> columns 8..86
    assert (rows[0], rows[-1]) in {(3, 20), (4, 20), (3, 19), (4, 19)}
    assert (columns[0], columns[-1]) in {(8, 86), (8, 85), (9, 86), (9, 85)}


def test_a_tilted_plate_is_warped_upright(frames) -> None:
    """A plate rotated by 10 degrees reads the same as the upright one once warped from its corners."""
    import cv2

    upright = np.zeros((200, 400, 3), np.uint8)
    upright[80:120, 100:300] = 255
    cv2.putText(upright, "A123BC", (110, 112), cv2.FONT_HERSHEY_SIMPLEX, 1.1, (0, 0, 0), 3)
    rotation = cv2.getRotationMatrix2D((200, 100), 10, 1.0)
    tilted = cv2.warpAffine(upright, rotation, (400, 200))
    corners = _corners(100, 80, 300, 120)
    tilted_corners = cv2.transform(corners[None], rotation)[0]
    expected = frames.plate_tensor(upright, corners)
    actual = frames.plate_tensor(tilted, tilted_corners)
    assert np.abs(actual - expected).mean() < 0.1
    assert np.abs(frames.plate_tensor(tilted, corners) - expected).mean() > 0.2


def _logits(path: list[int], confidence: float = 0.9) -> np.ndarray:
    """Logits [23, T] whose softmax gives `confidence` to the path's class at every step."""
    logits = np.zeros((23, len(path)))
    rest = (1 - confidence) / 22
    for step, label in enumerate(path):
        logits[:, step] = np.log(rest)
        logits[label, step] = np.log(confidence)
    return logits


def test_ctc_collapses_repeats_and_drops_blanks(frames) -> None:
    b, k = VOCABULARY.index("B"), VOCABULARY.index("K")
    path = [b, b, BLANK, 8, 4, 4, BLANK, 4, 0, BLANK, k, k, BLANK, BLANK, 1, 9, 7, BLANK]
    text, confidences = frames.ctc_greedy_decode(_logits(path))
    assert text == "B8440K197"
    np.testing.assert_allclose(confidences, [0.9] * 9)


def test_character_confidence_is_its_best_step_and_the_plate_takes_the_weakest(frames) -> None:
    logits = np.concatenate([_logits([3], 0.5), _logits([3], 0.8), _logits([BLANK]), _logits([5], 0.6)], 1)
    text, confidences = frames.ctc_greedy_decode(logits)
    assert text == "35"
    np.testing.assert_allclose(confidences, [0.8, 0.6])
    assert frames.plate_confidence(confidences) == pytest.approx(0.6)


def test_all_blank_reads_nothing(frames) -> None:
    text, confidences = frames.ctc_greedy_decode(_logits([BLANK] * 18))
    assert (text, confidences) == ("", [])
    assert frames.plate_confidence(confidences) == 0.0
