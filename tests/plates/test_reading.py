"""Reading through the format: exact against brute force, today's greedy CTC, a region's choice."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from model_repository.conftest import load_model_file

from stream_worker.contracts.plate_formats import GLOBAL, LPRNET, PlateFormat, Region, compile_format, region
from stream_worker.plates.reading import (
    GLOBAL_PAD,
    GLOBAL_SLOTS,
    GLOBAL_VOCABULARY,
    LPRNET_BLANK,
    LPRNET_STEPS,
    LPRNET_VOCABULARY,
    MIN_FIT_RATIO,
    read_argmax,
    read_ctc,
    read_greedy,
    read_plate,
    read_slots,
)

BLS_FRAMES = load_model_file("plate_recognition", "frames")


LATIN = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _format(
    pattern: str,
    prior: float = 1.0,
    name: str = "f",
    same: tuple[tuple[str, str], ...] = (),
    recognizer: str = GLOBAL,
) -> PlateFormat:
    return compile_format("xx", name, pattern, "test", prior, LATIN, (recognizer,), None, same)


def _slots_for(text: str, sure: float = 0.9, **doubts: dict[str, float]) -> np.ndarray:
    """CCT probabilities that read `text` (pads after it) with `sure` on each slot; `doubts` maps a
    slot index (as `s3`) to the classes it hesitates between."""
    probs = np.full((GLOBAL_SLOTS, len(GLOBAL_VOCABULARY)), 0.0)
    padded = text + "_" * (GLOBAL_SLOTS - len(text))
    for slot, char in enumerate(padded):
        probs[slot] = (1 - sure) / (len(GLOBAL_VOCABULARY) - 1)
        probs[slot, GLOBAL_VOCABULARY.index(char)] = sure
        if f"s{slot}" in doubts:
            probs[slot] = 1e-12
            for doubt, p in doubts[f"s{slot}"].items():
                probs[slot, GLOBAL_VOCABULARY.index(doubt)] = p
            probs[slot] /= probs[slot].sum()
    return probs


def _steps_for(path: str, sure: float = 0.9) -> np.ndarray:
    """LPRNet probabilities [18, 23] whose argmax path is `path` ('-' = blank), padded with blanks."""
    path = path.ljust(LPRNET_STEPS, "-")
    probs = np.full((LPRNET_STEPS, LPRNET_BLANK + 1), (1 - sure) / LPRNET_BLANK)
    for step, char in enumerate(path):
        probs[step, LPRNET_BLANK if char == "-" else LPRNET_VOCABULARY.index(char)] = sure
    return probs


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


# --- today's greedy CTC -----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.5, 6),
    st.lists(st.integers(0, LPRNET_STEPS - 1), max_size=12),
    st.lists(st.integers(0, LPRNET_STEPS - 2), max_size=6),
)
def test_greedy_reproduces_the_bls_text_and_confidences_exactly(seed, spread, blank_steps, repeat_steps):
    logits = (
        np.random.default_rng(seed).normal(0, spread, (LPRNET_BLANK + 1, LPRNET_STEPS)).astype(np.float32)
    )
    logits[LPRNET_BLANK, blank_steps] += 4  # runs of blanks between characters, as real plates have
    for step in repeat_steps:  # a character held over two steps: collapsed, its best step counts
        logits[:, step + 1] = logits[:, step] + np.float32(0.5) * (logits[:, step + 1] - logits[:, step])
    text, characters = BLS_FRAMES.ctc_greedy_decode(logits)
    # What the BLS's `plate_lprnet_probs` carries: the same float64 softmax, time-major, as FP32.
    probs = BLS_FRAMES.softmax(logits.astype(np.float64), axis=0).T.astype(np.float32)
    # Two classes within FP32 rounding of each other (logits 1e-11 apart) tie in the FP32 output;
    # the BLS's float64 argmax may pick the later one. Out of reach of real logits; left out here.
    top_two = np.sort(probs, axis=1)[:, -2:]
    assume(bool(np.all(top_two[:, 1] > top_two[:, 0])))
    reading = read_greedy(probs)
    assert reading.text == text
    assert np.array_equal(np.float32(reading.character_confidences), np.float32(characters))
    assert np.float32(reading.confidence) == np.float32(BLS_FRAMES.plate_confidence(characters))
    assert reading.recognizer == LPRNET and reading.country is None and not reading.format_valid


def test_greedy_collapses_repeats_and_keeps_a_repeat_split_by_a_blank():
    reading = read_greedy(_steps_for("BB-8-84400CCK-119-77"[:18]))
    assert reading.text == "B8840CK19"
    assert read_greedy(_steps_for("")).text == ""
    assert read_greedy(_steps_for("")).confidence == 0.0


# --- the CCT: argmax and slots ----------------------------------------------------------------


def test_argmax_drops_pads_and_its_confidence_counts_them():
    probs = _slots_for("AB12CDE", s7={"_": 0.6, "F": 0.4})
    reading = read_argmax(probs)
    assert reading.text == "AB12CDE"
    assert reading.confidence == pytest.approx(0.6)
    assert len(reading.character_confidences) == 7
    assert not reading.format_valid


def test_the_format_puts_a_letter_where_it_wants_one():
    gb = region("gb")
    probs = _slots_for("AB12CDE", s2={"I": 0.7, "1": 0.3}, s4={"0": 0.6, "O": 0.4})
    assert read_argmax(probs).text == "ABI20DE"
    reading = read_slots(probs, gb.formats)
    assert reading.text == "AB12ODE"
    assert (reading.country, reading.format, reading.format_valid) == ("gb", "current", True)
    assert reading.confidence == pytest.approx(0.3)
    assert reading.character_confidences[2] == pytest.approx(0.3)
    assert reading.character_confidences[4] == pytest.approx(0.4)


def _brute_force_slots(probs: np.ndarray, formats: list[PlateFormat]) -> float:
    best = -math.inf
    for fmt in formats:
        for expansion in fmt.expansions:
            for text in itertools.product(*expansion):
                score = math.log(fmt.prior)
                score += sum(math.log(probs[i, GLOBAL_VOCABULARY.index(c)]) for i, c in enumerate(text))
                score += sum(math.log(probs[i, GLOBAL_PAD]) for i in range(len(text), GLOBAL_SLOTS))
                best = max(best, score)
    return best


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (GLOBAL_SLOTS, len(GLOBAL_VOCABULARY)), elements=st.floats(-6, 6)))
def test_slots_find_the_most_probable_allowed_text(logits):
    probs = _softmax_rows(logits)
    formats = [_format("[A0O]{1,3}[B8]", prior=0.5, name="one"), _format("0[DO]{0,2}", name="two")]
    reading = read_slots(probs, formats)
    fmt = next(f for f in formats if f.name == reading.format)
    assert fmt.matches(reading.text)
    score = reading.log_probability + math.log(fmt.prior)
    assert score == pytest.approx(_brute_force_slots(probs, formats), abs=1e-9)
    text = reading.text.ljust(GLOBAL_SLOTS, "_")
    assert reading.confidence == pytest.approx(
        min(probs[i, GLOBAL_VOCABULARY.index(c)] for i, c in enumerate(text))
    )


def test_a_prior_keeps_a_fallback_from_swallowing_a_specific_format():
    specific, fallback = _format("AAA000", name="specific"), _format("*{2,8}", prior=0.1, name="fallback")
    probs = _slots_for("ABC123", s3={"I": 0.6, "1": 0.4})
    assert read_slots(probs, [specific, fallback]).text == "ABC123"
    assert read_slots(probs, [_format("AAA000", prior=0.1), _format("*{2,8}")]).text == "ABCI23"


def test_characters_a_country_does_not_tell_apart_count_together():
    us = Region("us", (GLOBAL,), (_format("*{2,8}", same=(("O", "0"),)),))
    us = Region(
        "us",
        (GLOBAL,),
        (
            compile_format(
                "us", "any", "*{2,8}", "t", 1.0, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", (GLOBAL,), None, (("O", "0"),)
            ),
        ),
    )
    reading = read_slots(_slots_for("GOLF", s1={"O": 0.6, "0": 0.3, "D": 0.1}), us.formats)
    assert reading.text == "G0LF"
    assert reading.character_confidences[1] == pytest.approx(0.9)
    # Where the position wants a letter only, O stays O.
    letters = compile_format(
        "us", "l", "AAAA", "t", 1.0, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", (GLOBAL,), None, (("O", "0"),)
    )
    assert read_slots(_slots_for("GOLF", s1={"O": 0.6, "0": 0.4}), [letters]).text == "GOLF"


def test_slots_without_formats_read_nothing():
    assert read_slots(_slots_for("ABC"), []) is None


def test_probabilities_of_the_wrong_shape_are_refused():
    with pytest.raises(ValueError, match=r"global_probs must have the shape \(9, 37\)"):
        read_argmax(np.zeros((9, 36)))
    with pytest.raises(ValueError, match=r"lprnet_probs must have the shape \(18, 23\)"):
        read_greedy(np.zeros((23, 18)))


# --- LPRNet through the format: CTC Viterbi ---------------------------------------------------


def _best_alignment(log_probs: np.ndarray, labels: list[int]) -> float:
    """The textbook CTC Viterbi of one label sequence (blank-interleaved states)."""
    states = [LPRNET_BLANK]
    for label in labels:
        states += [label, LPRNET_BLANK]
    score = [-math.inf] * len(states)
    score[0], score[1] = log_probs[0, states[0]], log_probs[0, states[1]]
    for step in range(1, len(log_probs)):
        new = []
        for s, label in enumerate(states):
            best = max(score[s], score[s - 1] if s else -math.inf)
            if s >= 2 and label != LPRNET_BLANK and states[s - 2] != label:
                best = max(best, score[s - 2])
            new.append(best + log_probs[step, label])
        score = new
    return max(score[-1], score[-2])


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (LPRNET_STEPS, LPRNET_BLANK + 1), elements=st.floats(-5, 5)))
def test_ctc_finds_the_most_probable_alignment_of_an_allowed_text(logits):
    probs = _softmax_rows(logits)
    log_probs = np.log(probs)
    formats = [
        _format("[AB][0O]{1,2}", name="one", recognizer=LPRNET),
        _format("[ABC][AB]", prior=0.5, name="two", recognizer=LPRNET),
    ]
    reading = read_ctc(probs, formats)
    fmt = next(f for f in formats if f.name == reading.format)
    assert fmt.matches(reading.text)
    brute = max(
        math.log(f.prior) + _best_alignment(log_probs, [LPRNET_VOCABULARY.index(c) for c in text])
        for f in formats
        for expansion in f.expansions
        for text in itertools.product(*expansion)
    )
    assert reading.log_probability + math.log(fmt.prior) == pytest.approx(brute, abs=1e-9)
    assert reading.confidence == min(reading.character_confidences)


def test_ctc_reads_a_repeated_character_only_across_a_blank_and_fixes_the_format():
    ru = region("ru")
    reading = read_ctc(_steps_for("BB-8-44-0-0CC-KK-1-9-77"[:18]), ru.formats)
    assert reading is not None and ru.formats[0].matches(reading.text)
    probs = _steps_for("B-8-4-O-C-K-1-9-7")  # greedy B84OCK197: a letter where a digit belongs
    probs[6, LPRNET_VOCABULARY.index("0")] = 0.08  # 0 a little less likely than O at that step
    assert read_greedy(probs).text == "B84OCK197"
    fixed = read_ctc(probs, ru.formats)
    assert (fixed.text, fixed.format_valid, fixed.country) == ("B840CK197", True, "ru")


# --- a region's read --------------------------------------------------------------------------


def test_region_ru_reads_exactly_as_today():
    ru = region("ru")
    valid = read_plate(ru, _steps_for("B-8-4-0-C-K-1-9-7"), None)
    assert (valid.text, valid.recognizer, valid.country, valid.format, valid.format_valid) == (
        "B840CK197",
        LPRNET,
        "ru",
        "private",
        True,
    )
    invalid = _steps_for("B-8-4-O-C-K-1-9-7")
    invalid[6, LPRNET_VOCABULARY.index("0")] = 0.08
    today = read_greedy(invalid)
    reading = read_plate(ru, invalid, None)
    assert (reading.text, reading.confidence, reading.character_confidences) == (
        today.text,
        today.confidence,
        today.character_confidences,
    )
    assert (reading.format_valid, reading.country, reading.format) == (False, None, None)


def test_a_read_that_fits_no_format_stays_unconstrained_and_invalid():
    garbage = _slots_for("Q7", sure=0.95)
    reading = read_plate(region("fr"), None, garbage)
    assert (reading.text, reading.format_valid, reading.country) == ("Q7", False, None)
    assert read_slots(garbage, region("fr").formats).log_probability < (
        read_argmax(garbage).log_probability + math.log(MIN_FIT_RATIO)
    )


def test_the_region_formats_settle_a_look_alike():
    probs = _slots_for("AB123CD", s2={"I": 0.55, "1": 0.45})
    assert read_plate(region("fr"), None, probs).text == "AB-123-CD".replace("-", "")
    assert read_plate(region("fr"), None, probs).format_key == "fr/SIV"


def test_auto_keeps_the_recognizer_whose_fitting_read_is_surer():
    auto = region("auto")
    russian = _steps_for("B-8-4-0-C-K-1-9-7", sure=0.95)
    unsure_latin = _slots_for("AB123CD", sure=0.5)
    reading = read_plate(auto, russian, unsure_latin)
    assert (reading.text, reading.recognizer, reading.country) == ("B840CK197", LPRNET, "ru")
    sure_latin = _slots_for("AB123CD", sure=0.99)
    unsure_russian = _steps_for("B-8-4-0-C-K-1-9-7", sure=0.5)
    reading = read_plate(auto, unsure_russian, sure_latin)
    assert (reading.text, reading.recognizer, reading.country) == ("AB123CD", GLOBAL, "fr")


def test_auto_falls_back_to_the_surer_unconstrained_read():
    auto = region("auto")
    reading = read_plate(auto, _steps_for("7-7", sure=0.9), _slots_for("Q", sure=0.6))
    assert (reading.text, reading.recognizer, reading.format_valid) == ("77", LPRNET, False)


def test_a_region_whose_recognizers_did_not_run_is_an_error():
    with pytest.raises(ValueError, match="region 'us' reads with global; none of them ran"):
        read_plate(region("us"), _steps_for("B-8"), None)
    assert read_plate(region("auto"), None, _slots_for("AB123CD")).recognizer == GLOBAL


def test_us_plates_write_o_as_zero_where_the_format_allows_both_and_keep_it_in_letter_positions():
    us = region("us")
    personalized = read_plate(us, None, _slots_for("CHICAGO", s6={"O": 0.7, "0": 0.3}))
    assert (personalized.text, personalized.format) == ("CHICAG0", "personalized")
    assert personalized.character_confidences[6] == pytest.approx(1.0)
    serial = read_plate(us, None, _slots_for("NOX218"))
    assert (serial.text, serial.format) == ("NOX218", "AAA000")
