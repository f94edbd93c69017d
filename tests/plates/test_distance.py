"""The plain edit distance, on hand-made pairs."""

from __future__ import annotations

import pytest

from stream_worker.plates.distance import edit_distance


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("A123BC77", "A123BC77", 0),
        ("A123BC77", "A123BC7", 1),  # deletion
        ("A123BC7", "A123BC77", 1),  # insertion
        ("B840OK197", "B840CK197", 1),  # substitution
        ("", "A123BC77", 8),
        ("A123BC77", "", 8),
        ("AB", "BA", 2),
        ("kitten", "sitting", 3),
    ],
)
def test_edit_distance(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance
