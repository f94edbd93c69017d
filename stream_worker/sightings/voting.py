"""One text from many reads of a plate: align the reads, vote per character, rank the candidates.

Single frames disagree by a character or two, and a region may come out with 2 digits in one frame
and 3 in the next, so the reads cannot be compared position by position. Each read is aligned to a
pivot (the read closest to all the others, by edit distance) and the vote runs over the pivot's
slots: each of its characters (a read may put another character there, or none), and each gap
between them (a read may insert characters the pivot lacks, as a 3-digit region read against a
2-digit pivot). A read's vote for a character weighs that character's confidence; a vote for
"nothing here" weighs the read's mean confidence. A slot's support for an option is the sum of its
votes over the number of reads, so unanimous but unsure reads still give a low support.

Candidates are the best paths through the slots (product of supports); the voted text is the best
candidate that matches the plate format, else the best candidate. Its confidence is the support
of its least supported character, as a frame's confidence is its least sure character's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from stream_worker.contracts import PLATE_FORMAT
from stream_worker.plates.distance import edit_distance

DEFAULT_FORMAT = re.compile(PLATE_FORMAT)
_NOTHING = ""
# A read further than this share of the pivot's length from it (a blurred frame read as noise) is
# left out of the vote: it belongs to the pass, but would only add noise to every slot.
OUTLIER_EDIT_SHARE = 0.34


@dataclass(frozen=True, slots=True)
class TextRead:
    """One frame's text and its per-character confidences (same length)."""

    text: str
    confidences: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.text) != len(self.confidences):
            raise ValueError(f"{self.text!r}: {len(self.confidences)} confidences for {len(self.text)} chars")

    @property
    def weight(self) -> float:
        """The read's vote for "no character here": its mean confidence."""
        return sum(self.confidences) / len(self.confidences) if self.confidences else 0.0


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    score: float  # product of the supports of its slots' options, in [0, 1]
    confidence: float  # support of its least supported character


@dataclass(frozen=True, slots=True)
class Vote:
    text: str
    confidence: float
    format_valid: bool
    candidates: tuple[Candidate, ...]  # best first; `text` is one of them


def format_valid(text: str, plate_format: re.Pattern[str] = DEFAULT_FORMAT) -> bool:
    return plate_format.match(text) is not None


def align(pivot: str, text: str) -> tuple[list[int | None], list[list[int]]]:
    """A minimum-edit alignment of `text` to `pivot`.

    Returns, for each pivot position, the index of the character of `text` aligned there (None:
    deleted), and for each of the len(pivot) + 1 gaps (before, between and after the pivot's
    characters) the indices of the characters of `text` inserted there. Ties between equally short
    alignments go to substitutions, then to deletions, so that the result is deterministic.
    """
    rows, cols = len(pivot) + 1, len(text) + 1
    cost = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        cost[i][0] = i
    for j in range(cols):
        cost[0][j] = j
    for i in range(1, rows):
        for j in range(1, cols):
            cost[i][j] = min(
                cost[i - 1][j - 1] + (pivot[i - 1] != text[j - 1]),
                cost[i - 1][j] + 1,
                cost[i][j - 1] + 1,
            )
    at: list[int | None] = [None] * len(pivot)
    inserted: list[list[int]] = [[] for _ in range(len(pivot) + 1)]
    i, j = len(pivot), len(text)
    while i > 0 or j > 0:
        if i > 0 and j > 0 and cost[i][j] == cost[i - 1][j - 1] + (pivot[i - 1] != text[j - 1]):
            at[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif i > 0 and cost[i][j] == cost[i - 1][j] + 1:
            i -= 1  # pivot[i] has no counterpart: at[i] stays None
        else:
            inserted[i].insert(0, j - 1)
            j -= 1
    return at, inserted


def _pivot(reads: Sequence[TextRead]) -> TextRead:
    """The read with the least total edit distance to the others (ties: surer, then earlier)."""
    best_index = min(
        range(len(reads)),
        key=lambda i: (
            sum(edit_distance(reads[i].text, other.text) for other in reads),
            -reads[i].weight,
            i,
        ),
    )
    return reads[best_index]


def _slots(reads: Sequence[TextRead], pivot: str) -> list[dict[str, float]]:
    """Support of each option in each slot: gap 0, character 0, gap 1, ..., character n-1, gap n."""
    weights: list[dict[str, float]] = [{} for _ in range(2 * len(pivot) + 1)]
    for read in reads:
        at, inserted = align(pivot, read.text)
        for gap, indices in enumerate(inserted):
            option = "".join(read.text[k] for k in indices)
            weight = sum(read.confidences[k] for k in indices) / len(indices) if indices else read.weight
            slot = weights[2 * gap]
            slot[option] = slot.get(option, 0.0) + weight
        for position, index in enumerate(at):
            option = _NOTHING if index is None else read.text[index]
            weight = read.weight if index is None else read.confidences[index]
            slot = weights[2 * position + 1]
            slot[option] = slot.get(option, 0.0) + weight
    count = len(reads)
    # Gaps where no read inserts anything are a certain "nothing": drop them from the product.
    return [
        {option: weight / count for option, weight in slot.items()}
        for slot in weights
        if set(slot) != {_NOTHING}
    ]


def vote(reads: Sequence[TextRead], top: int = 5, plate_format: re.Pattern[str] = DEFAULT_FORMAT) -> Vote:
    """The voted text of `reads` (at least one) and the `top` candidates, best first: the best
    candidate of `plate_format`, else the best."""
    if not reads:
        raise ValueError("nothing to vote on")
    if top < 1:
        raise ValueError("top must be at least 1")
    pivot = _pivot(reads)
    limit = max(1, int(OUTLIER_EDIT_SHARE * len(pivot.text)))
    voters = [read for read in reads if edit_distance(read.text, pivot.text) <= limit]
    slots = _slots(voters, pivot.text)
    # Beam search over the slots; a path is (score, text, least character support).
    beam: list[tuple[float, str, float]] = [(1.0, "", 1.0)]
    for slot in slots:
        options = sorted(slot.items(), key=lambda item: (-item[1], item[0]))
        extended = [
            (score * support, text + option, min(least, support) if option else least)
            for score, text, least in beam
            for option, support in options
        ]
        extended.sort(key=lambda path: (-path[0], path[1]))
        beam = extended[: max(top, 8)]
    merged: dict[str, Candidate] = {}
    for score, text, least in beam:
        if text not in merged:  # two paths can spell one text: keep the better
            merged[text] = Candidate(text, round(score, 4), round(least, 4))
    candidates = tuple(sorted(merged.values(), key=lambda c: (-c.score, c.text))[:top])
    chosen = next((c for c in candidates if format_valid(c.text, plate_format)), candidates[0])
    return Vote(chosen.text, chosen.confidence, format_valid(chosen.text, plate_format), candidates)
