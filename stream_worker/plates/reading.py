"""Turn a recognizer's probabilities into a plate's text, through the plate formats of a region.

Two recognizers (contracts.plate_formats, docs/regions.md "Plates of other countries: formats"):
- `global`, the Latin-script CCT: [9 slots, 37 classes], slot i is character i, `_` (class 36)
  pads after the text. `read_slots` finds, per format, the exact most probable text it allows: each
  position's most probable character within its class, the pad in every slot after the text, the
  product over all 9 slots; then the best over formats, each weighted by its `prior`.
- `lprnet`, the Russian LPRNet: [18 time steps, 23 classes] CTC, class 22 the blank. `read_ctc` is
  a Viterbi over (time step, position in the format) with CTC's blanks and repeats: the most
  probable single alignment of a text the format allows.

The plain readings stay for debugging and as today's behaviour: `read_argmax` (per-slot argmax,
pads dropped) and `read_greedy` (greedy CTC, exactly the BLS's `ctc_greedy_decode`).

Confidences follow the BLS's rule: a plate is only as sure as its least sure character, so
`confidence` is the minimum of `character_confidences` (a character's probability: its slot's, or
the highest over the CTC steps that emitted it); a slot read's pads count too (a doubtful pad means
a doubtful length). `log_probability` (the text's, prior included) ranks a region's candidates of
one recognizer; between recognizers, whose probabilities are not comparable, `confidence` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from stream_worker.contracts.plate_formats import (
    GLOBAL,
    LPRNET,
    RECOGNIZER_ALPHABETS,
    PlateFormat,
    Region,
    Slots,
    best_fit,
)

GLOBAL_VOCABULARY = RECOGNIZER_ALPHABETS[GLOBAL] + "_"
GLOBAL_PAD = len(GLOBAL_VOCABULARY) - 1  # class 36
GLOBAL_SLOTS = 9
LPRNET_VOCABULARY = RECOGNIZER_ALPHABETS[LPRNET]
LPRNET_BLANK = len(LPRNET_VOCABULARY)  # class 22
LPRNET_STEPS = 18
# Which recognizers' constrained reading a region uses: LPRNet's stays greedy (today's reading) until
# a measurement shows `read_ctc` reads no Russian plate worse (docs/regions.md).
CONSTRAINED = {GLOBAL: True, LPRNET: False}
# A format's best text counts as a fit only when it is at least this share as probable as the
# unconstrained read: reading garbage "through" a format must not make it a valid plate. The reads
# the formats corrected on the US and Argentine crops were at least 0.11 of it (README).
MIN_FIT_RATIO = 0.05
_FLOOR = 1e-30  # log(0) guard: a probability this small is as impossible as zero here


@dataclass(frozen=True, slots=True)
class Reading:
    """One plate's text as read, and what it was read through."""

    text: str
    confidence: float
    character_confidences: tuple[float, ...]
    recognizer: str
    country: str | None = None  # the matched format's country; None when no format fits
    format: str | None = None  # the matched format's name
    format_valid: bool = False
    log_probability: float = -math.inf  # of the text (its path, for CTC), without any prior

    @property
    def format_key(self) -> str | None:
        return None if self.format is None else f"{self.country}/{self.format}"


def _log(probs: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(np.asarray(probs, dtype=np.float64), _FLOOR))


def _check(probs: np.ndarray, shape: tuple[int, int], name: str) -> np.ndarray:
    array = np.asarray(probs)
    if array.shape != shape:
        raise ValueError(f"{name} must have the shape {shape}, got {array.shape}")
    return array


def _fitted(reading: Reading, region_formats: tuple[PlateFormat, ...]) -> Reading:
    """The reading with the format (of `region_formats`) its text fits best (`best_fit`), if any."""
    fmt = best_fit(reading.text, region_formats) if reading.text else None
    if fmt is None:
        return reading
    return _with_format(reading, fmt)


def _with_format(reading: Reading, fmt: PlateFormat) -> Reading:
    return Reading(
        reading.text,
        reading.confidence,
        reading.character_confidences,
        reading.recognizer,
        fmt.country,
        fmt.name,
        True,
        reading.log_probability,
    )


# --- the Latin CCT: independent slots ----------------------------------------------------------


def read_argmax(global_probs: np.ndarray) -> Reading:
    """The unconstrained read: the most probable class per slot, pads dropped (no format)."""
    probs = _check(global_probs, (GLOBAL_SLOTS, len(GLOBAL_VOCABULARY)), "global_probs")
    best = probs.argmax(axis=1)
    chosen = probs[np.arange(GLOBAL_SLOTS), best].astype(np.float64)
    characters = tuple(float(p) for k, p in zip(best, chosen, strict=True) if k != GLOBAL_PAD)
    text = "".join(GLOBAL_VOCABULARY[k] for k in best if k != GLOBAL_PAD)
    return Reading(
        text,
        float(chosen.min()) if text else 0.0,
        characters,
        GLOBAL,
        log_probability=float(_log(chosen).sum()),
    )


@cache
def _indices(allowed: str, vocabulary: str) -> np.ndarray:
    return np.array([vocabulary.index(char) for char in allowed], dtype=np.int64)


_Column = tuple[np.ndarray, np.ndarray, np.ndarray]  # per slot: best log probability, class, probability


def _column(probs: np.ndarray, allowed: str, same: tuple[tuple[str, str], ...]) -> _Column:
    """For every slot at once, the most probable character of `allowed`. A `same` pair allowed here
    counts as one character, the written one, with both probabilities."""
    merged = [(read, written) for read, written in same if read in allowed and written in allowed]
    if merged:
        probs = probs.copy()
        for read, written in merged:
            probs[:, GLOBAL_VOCABULARY.index(written)] += probs[:, GLOBAL_VOCABULARY.index(read)]
            allowed = allowed.replace(read, "")
    indices = _indices(allowed, GLOBAL_VOCABULARY)
    values = probs[:, indices]
    best = values.argmax(axis=1)
    chosen = values[np.arange(GLOBAL_SLOTS), best]
    return _log(chosen), indices[best], chosen


def read_slots(
    global_probs: np.ndarray, formats: tuple[PlateFormat, ...] | list[PlateFormat]
) -> Reading | None:
    """The most probable text (times its format's prior) that one of `formats` allows, from the
    CCT's [9, 37] slot probabilities; None without formats. Ties go to the earlier format.

    Exact: the slots are independent, so an expansion's best text is each position's best
    character within its class (one column per distinct class, for all slots at once), then the
    pad in every slot after it."""
    probs = _check(global_probs, (GLOBAL_SLOTS, len(GLOBAL_VOCABULARY)), "global_probs").astype(np.float64)
    pads = _log(probs[:, GLOBAL_PAD])
    pad_tail = np.concatenate([np.cumsum(pads[::-1])[::-1], [0.0]])  # [L]: log P(pads from slot L on)
    columns: dict[tuple[str, tuple[tuple[str, str], ...]], _Column] = {}
    best: tuple[float, float, Slots, PlateFormat] | None = None  # (score with prior, without, ...)
    for fmt in formats:
        weight = math.log(fmt.prior)
        for expansion in fmt.expansions:
            if len(expansion) > GLOBAL_SLOTS:
                continue
            total = float(pad_tail[len(expansion)])
            for slot, allowed in enumerate(expansion):
                column = columns.get((allowed, fmt.same))
                if column is None:
                    column = columns[(allowed, fmt.same)] = _column(probs, allowed, fmt.same)
                total += float(column[0][slot])
            if best is None or total + weight > best[0]:
                best = (total + weight, total, expansion, fmt)
    if best is None:
        return None
    _, total, expansion, fmt = best
    picked = [columns[(allowed, fmt.same)] for allowed in expansion]
    text = "".join(GLOBAL_VOCABULARY[column[1][slot]] for slot, column in enumerate(picked))
    characters = [float(column[2][slot]) for slot, column in enumerate(picked)]
    chosen = characters + [float(p) for p in probs[len(expansion) :, GLOBAL_PAD]]
    named = best_fit(text, [other for other in formats if other.prior == fmt.prior]) or fmt
    return Reading(text, min(chosen), tuple(characters), GLOBAL, named.country, named.name, True, total)


# --- LPRNet: CTC -------------------------------------------------------------------------------


def read_greedy(lprnet_probs: np.ndarray) -> Reading:
    """Greedy CTC exactly as the BLS decodes today (`plate_recognition/1/frames.py`
    `ctc_greedy_decode` + `plate_confidence`): argmax per step, repeats collapsed, blanks dropped; a
    character's confidence is the highest probability over the steps that produced it."""
    probs = _check(lprnet_probs, (LPRNET_STEPS, LPRNET_BLANK + 1), "lprnet_probs")
    best = probs.argmax(axis=1)
    text: list[str] = []
    confidences: list[float] = []
    previous = LPRNET_BLANK
    for step, label in enumerate(best):
        label = int(label)
        if label != LPRNET_BLANK:
            if label != previous:
                text.append(LPRNET_VOCABULARY[label])
                confidences.append(float(probs[step, label]))
            else:
                confidences[-1] = max(confidences[-1], float(probs[step, label]))
        previous = label
    chosen = probs[np.arange(LPRNET_STEPS), best]
    return Reading(
        "".join(text),
        min(confidences) if confidences else 0.0,
        tuple(confidences),
        LPRNET,
        log_probability=float(_log(chosen).sum()),
    )


@dataclass(frozen=True, slots=True)
class _Lattice:
    """The CTC states of one expansion: blank, class 1's labels, blank, ..., class L's labels, blank.
    `predecessors[s]` lists the states a path may come from into s (s itself first), -1 padded."""

    labels: np.ndarray  # [S] the class each state emits
    positions: np.ndarray  # [S] the character position (0-based) of a label state, -1 for blanks
    predecessors: np.ndarray  # [S, P]
    starts: np.ndarray  # states a path may start in
    ends: np.ndarray  # states a path may end in


@cache
def _lattice(expansion: Slots) -> _Lattice:
    labels: list[int] = [LPRNET_BLANK]
    positions: list[int] = [-1]
    groups: list[list[int]] = []  # per character position: its label states
    blanks: list[int] = [0]  # blank before position j is blanks[j]
    for position, allowed in enumerate(expansion):
        group = []
        for label in _indices(allowed, LPRNET_VOCABULARY):
            group.append(len(labels))
            labels.append(int(label))
            positions.append(position)
        groups.append(group)
        blanks.append(len(labels))
        labels.append(LPRNET_BLANK)
        positions.append(-1)
    predecessors: list[list[int]] = [[] for _ in labels]
    predecessors[0] = [0]
    for position, group in enumerate(groups):
        before, after = blanks[position], blanks[position + 1]
        predecessors[after] = [after, *group]
        for state in group:
            previous = groups[position - 1] if position else []
            predecessors[state] = [state, before, *(p for p in previous if labels[p] != labels[state])]
    width = max(len(p) for p in predecessors)
    table = np.full((len(labels), width), -1, dtype=np.int64)
    for state, froms in enumerate(predecessors):
        table[state, : len(froms)] = froms
    return _Lattice(
        np.array(labels, dtype=np.int64),
        np.array(positions, dtype=np.int64),
        table,
        np.array([0, *groups[0]], dtype=np.int64),
        np.array([blanks[-1], *groups[-1]], dtype=np.int64),
    )


def _viterbi(log_probs: np.ndarray, lattice: _Lattice) -> tuple[float, np.ndarray] | None:
    """The best path's log probability and its state per time step, or None when none fits."""
    steps = log_probs.shape[0]
    states = len(lattice.labels)
    score = np.full(states, -np.inf)
    score[lattice.starts] = log_probs[0, lattice.labels[lattice.starts]]
    emissions = log_probs[:, lattice.labels]  # [T, S]
    valid = lattice.predecessors >= 0
    back = np.zeros((steps, states), dtype=np.int64)
    for step in range(1, steps):
        candidates = np.where(valid, score[lattice.predecessors], -np.inf)
        choice = candidates.argmax(axis=1)
        back[step] = lattice.predecessors[np.arange(states), choice]
        score = candidates[np.arange(states), choice] + emissions[step]
    end = lattice.ends[score[lattice.ends].argmax()]
    if not np.isfinite(score[end]):
        return None
    path = np.empty(steps, dtype=np.int64)
    path[-1] = end
    for step in range(steps - 1, 0, -1):
        path[step - 1] = back[step, path[step]]
    return float(score[end]), path


def read_ctc(
    lprnet_probs: np.ndarray, formats: tuple[PlateFormat, ...] | list[PlateFormat]
) -> Reading | None:
    """The most probable CTC alignment (times its format's prior) of a text that one of `formats`
    allows, from LPRNet's [18, 23] step probabilities; None without formats that fit 18 steps."""
    probs = _check(lprnet_probs, (LPRNET_STEPS, LPRNET_BLANK + 1), "lprnet_probs").astype(np.float64)
    log_probs = _log(probs)
    best: tuple[float, np.ndarray, _Lattice, PlateFormat] | None = None
    for fmt in formats:
        weight = math.log(fmt.prior)
        for expansion in fmt.expansions:
            lattice = _lattice(expansion)
            found = _viterbi(log_probs, lattice)
            if found is not None and (best is None or found[0] + weight > best[0] + math.log(best[3].prior)):
                best = (found[0], found[1], lattice, fmt)
    if best is None:
        return None
    total, path, lattice, fmt = best
    length = int(lattice.positions.max()) + 1
    text = [""] * length
    confidences = [0.0] * length
    for step, state in enumerate(path):
        position = int(lattice.positions[state])
        if position >= 0:
            label = int(lattice.labels[state])
            text[position] = LPRNET_VOCABULARY[label]
            confidences[position] = max(confidences[position], float(probs[step, label]))
    plate = "".join(text)
    named = best_fit(plate, [other for other in formats if other.prior == fmt.prior]) or fmt
    return Reading(
        plate, min(confidences), tuple(confidences), LPRNET, named.country, named.name, True, total
    )


# --- a region's read ---------------------------------------------------------------------------


def _candidates(region: Region, recognizer: str, probs: np.ndarray) -> tuple[Reading | None, Reading]:
    """(the best format-fitting read or None, the unconstrained read) of one recognizer."""
    formats = region.formats_for(recognizer)
    plain = _fitted(read_argmax(probs) if recognizer == GLOBAL else read_greedy(probs), formats)
    constrained = None
    if CONSTRAINED[recognizer] and formats:
        constrained = read_slots(probs, formats) if recognizer == GLOBAL else read_ctc(probs, formats)
    if constrained is not None and constrained.log_probability < plain.log_probability + math.log(
        MIN_FIT_RATIO
    ):
        constrained = None
    if constrained is None and plain.format_valid:
        constrained = plain
    return constrained, plain


def read_plate(region: Region, lprnet_probs: np.ndarray | None, global_probs: np.ndarray | None) -> Reading:
    """The plate's text in `region`: of the region's recognizers that ran (their probabilities given),
    the format-fitting read with the highest confidence (times its format's prior); when nothing
    fits, the most confident unconstrained read with `format_valid=False` (its text may be empty).
    ValueError when none of the region's recognizers ran."""
    given = {LPRNET: lprnet_probs, GLOBAL: global_probs}
    fitting: list[Reading] = []
    plain: list[Reading] = []
    for recognizer in region.recognizers:
        probs = given[recognizer]
        if probs is None:
            continue
        constrained, unconstrained = _candidates(region, recognizer, probs)
        if constrained is not None:
            fitting.append(constrained)
        plain.append(unconstrained)
    if not plain:
        raise ValueError(
            f"region {region.code!r} reads with {', '.join(region.recognizers)}; none of them ran"
        )
    if fitting:
        return max(fitting, key=lambda reading: reading.confidence * _prior(region, reading))
    return max(plain, key=lambda reading: reading.confidence)


def _prior(region: Region, reading: Reading) -> float:
    return next(
        (
            fmt.prior
            for fmt in region.formats
            if fmt.country == reading.country and fmt.name == reading.format
        ),
        1.0,
    )
