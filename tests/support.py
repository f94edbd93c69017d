"""Small helpers several test modules share (importable because pytest's pythonpath has tests/)."""

from __future__ import annotations

# The acceptance allows the plate text to be one edit off; the product's own distance measures it.
from stream_worker.evaluation.scoring import edit_distance

__all__ = ["EXPECTED_PLATE", "edit_distance"]

EXPECTED_PLATE = "B840CK197"  # the van in samples/car.jpg
