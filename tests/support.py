"""Small helpers several test modules share (importable because pytest's pythonpath has tests/)."""

from __future__ import annotations

EXPECTED_PLATE = "B840CK197"  # the van in samples/car.jpg


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the acceptance allows the plate text to be one edit off."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]
