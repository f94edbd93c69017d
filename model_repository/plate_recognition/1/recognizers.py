"""Which recognizers read a frame's plates, and what the global recognizer's output says: no Triton import.

A frame asks through the optional `plate_recognizers` input (contract.py): `lprnet` (STN + LPRNet,
Russian plates, CTC over 18 time steps), `global` (global_ocr, fast-plate-ocr's CCT for Latin-script
plates, 9 slots of `0-9A-Z_`) or both. LPRNet runs only for the plates of frames that ask for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from contract import DEFAULT_RECOGNIZERS, GLOBAL_ALPHABET, GLOBAL_PAD, PLATE_RECOGNIZERS, RECOGNIZERS


def parse_recognizers(values: Sequence[bytes] | None, frames: int) -> list[tuple[str, ...]]:
    """One tuple of recognizer names per frame, in `RECOGNIZERS` order, from the optional input's
    values (None: the input is absent). b"" is the default (`lprnet`). Raises ValueError with the
    reason for a wrong count, an unknown name or an empty name between commas."""
    if values is None:
        return [DEFAULT_RECOGNIZERS] * frames
    if len(values) != frames:
        raise ValueError(f"{PLATE_RECOGNIZERS.name} has {len(values)} values for {frames} frames")
    result = []
    for frame, value in enumerate(values):
        text = bytes(value).decode("utf-8", errors="replace").strip()
        if not text:
            result.append(DEFAULT_RECOGNIZERS)
            continue
        names = [name.strip() for name in text.split(",")]
        unknown = [name for name in names if name not in RECOGNIZERS]
        if unknown:
            raise ValueError(
                f"{PLATE_RECOGNIZERS.name}: frame {frame} asks for {text[:64]!r}; each comma-separated "
                f"name must be one of {', '.join(RECOGNIZERS)}"
            )
        result.append(tuple(name for name in RECOGNIZERS if name in names))
    return result


def slot_argmax_decode(probabilities: np.ndarray) -> tuple[str, list[float]]:
    """Text and per-character confidence from global_ocr's softmax [9 slots, 37 classes]: the most
    probable class per slot, pads dropped; a character's confidence is its slot's probability."""
    best = probabilities.argmax(axis=1)
    text, confidences = [], []
    for slot, label in enumerate(best):
        character = GLOBAL_ALPHABET[int(label)]
        if character != GLOBAL_PAD:
            text.append(character)
            confidences.append(float(probabilities[slot, label]))
    return "".join(text), confidences


def plate_reading(
    lprnet: tuple[str, list[float]] | None, global_probabilities: np.ndarray | None
) -> tuple[str, list[float]]:
    """The plate's `plate_text` and per-character confidences: LPRNet's reading (None: it did not run)
    when it read something, else global_ocr's argmax (None: it did not run); ("", []) when neither
    read anything, and the plate is dropped."""
    if lprnet is not None and lprnet[0]:
        return lprnet
    if global_probabilities is not None:
        return slot_argmax_decode(global_probabilities)
    return "", []
