"""The second recognizer's pure helpers: which recognizers a frame asks for, the CCT's argmax
reading, and its 128x64 RGB crop warped from the plate's corners."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_"


@pytest.mark.parametrize(
    ("value", "names"),
    [
        (b"", ("lprnet",)),
        (b"lprnet", ("lprnet",)),
        (b"global", ("global",)),
        (b"lprnet,global", ("lprnet", "global")),
        (b"global, lprnet", ("lprnet", "global")),
        (b"global,global", ("global",)),
    ],
)
def test_a_frame_names_its_recognizers(recognizers, value: bytes, names: tuple[str, ...]) -> None:
    assert recognizers.parse_recognizers([b"", value], 2) == [("lprnet",), names]


def test_without_the_input_every_frame_is_read_by_lprnet(recognizers) -> None:
    assert recognizers.parse_recognizers(None, 3) == [("lprnet",)] * 3


@pytest.mark.parametrize(
    ("values", "frames", "words"),
    [
        ([b"eu"], 1, "frame 0 asks for 'eu'; each comma-separated name must be one of lprnet, global"),
        ([b"lprnet", b"lprnet,"], 2, "frame 1 asks for 'lprnet,'"),
        ([b"LPRNET"], 1, "frame 0 asks for 'LPRNET'"),
        ([b"global", b"global"], 1, "plate_recognizers has 2 values for 1 frames"),
    ],
)
def test_a_bad_value_is_refused_with_the_reason(recognizers, values, frames: int, words: str) -> None:
    with pytest.raises(ValueError) as raised:
        recognizers.parse_recognizers(values, frames)
    assert words in str(raised.value)


def _slots(text: str, probability: float = 0.9) -> np.ndarray:
    """Softmax-like [9, 37]: `text` then pads, each slot's best class at `probability`."""
    rest = (1 - probability) / 36
    slots = np.full((9, 37), rest, np.float32)
    for slot, character in enumerate(text.ljust(9, "_")):
        slots[slot, ALPHABET.index(character)] = probability
    return slots


def test_the_global_reading_is_the_argmax_per_slot_without_pads(recognizers) -> None:
    slots = _slots("AB123CD")
    slots[2, ALPHABET.index("1")] = 0.6
    text, confidences = recognizers.slot_argmax_decode(slots)
    assert text == "AB123CD"
    assert confidences == pytest.approx([0.9, 0.9, 0.6, 0.9, 0.9, 0.9, 0.9])
    assert recognizers.slot_argmax_decode(_slots("")) == ("", [])


def test_a_pad_between_characters_is_dropped(recognizers) -> None:
    assert recognizers.slot_argmax_decode(_slots("AB_12"))[0] == "AB12"


def test_lprnets_reading_comes_first_when_it_read_something(recognizers) -> None:
    lprnet = ("B840CK197", [0.9] * 9)
    assert recognizers.plate_reading(lprnet, _slots("AB123CD")) == lprnet
    assert recognizers.plate_reading(lprnet, None) == lprnet
    assert recognizers.plate_reading(("", []), _slots("AB123CD", 0.5)) == ("AB123CD", [0.5] * 7)
    assert recognizers.plate_reading(None, _slots("AB123CD", 0.5))[0] == "AB123CD"
    assert (
        recognizers.plate_reading(("", []), None) == recognizers.plate_reading(None, _slots("")) == ("", [])
    )


def test_the_global_crop_is_the_plate_flat_in_rgb(frames) -> None:
    """A blue plate (BGR) whose left half is dark, tilted in the frame: the crop is 128x64 RGB, the
    plate fills it inside the margins, its left half dark."""
    image = np.zeros((200, 300, 3), np.uint8)
    corners = np.array([[60, 80], [240, 60], [245, 120], [65, 140]], np.float32)
    mask = np.zeros(image.shape[:2], np.uint8)
    cv2.fillConvexPoly(mask, corners.astype(np.int32), 1)
    image[mask == 1] = (255, 0, 0)  # blue in BGR
    left = np.array([[60, 80], [150, 70], [155, 130], [65, 140]], np.int32)
    cv2.fillConvexPoly(image, left, (40, 0, 0))
    crop = frames.global_crop(image, corners, 0.0, 0.0)
    assert crop.shape == (64, 128, 3) and crop.dtype == np.uint8
    inner = crop[8:-8, 8:-8].astype(int)
    assert (inner[..., 2] > 200).sum() > 0.4 * inner[..., 2].size  # blue is the last channel: RGB
    assert inner[..., 0].max() < 30  # no red anywhere
    assert crop[16:48, 8:56, 2].mean() < 80 < crop[16:48, 72:120, 2].mean()
    margins = frames.global_crop(image, corners, 0.25, 0.1)
    assert margins.shape == (64, 128, 3)
    assert margins[:4].mean() < crop[:4].mean()  # the frame's black shows above the plate


def test_a_large_plate_is_area_averaged_not_aliased(frames) -> None:
    """Stripes one pixel wide average to grey; a direct cubic warp would keep picking stripes."""
    image = np.zeros((640, 1280, 3), np.uint8)
    image[:, ::2] = 255
    crop = frames.global_crop(image, frames.image_corners(1280, 640), 0.0, 0.0)
    assert crop.shape == (64, 128, 3)
    assert 100 < crop.mean() < 155 and crop.std() < 20


def test_the_image_corners_are_its_whole_extent(frames) -> None:
    assert frames.image_corners(128, 40).tolist() == [[0, 0], [128, 0], [128, 40], [0, 40]]
    assert frames.plate_extent(frames.image_corners(128, 40)) == (128.0, 40.0)
