"""Voting one text out of many reads: alignment, per-character votes, candidates, the format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.plates.distance import edit_distance
from stream_worker.sightings.voting import TextRead, align, vote

PLATE = "B840CK197"
LETTERS = "ABEKMHOPCTYX"


def reads(*texts: str, confidence: float = 0.9) -> list[TextRead]:
    return [TextRead(text, (confidence,) * len(text)) for text in texts]


# --- alignment -------------------------------------------------------------------------------


def test_align_identical_texts_maps_each_character_to_itself():
    at, inserted = align("A123BC77", "A123BC77")
    assert at == list(range(8))
    assert all(not gap for gap in inserted)


def test_align_a_two_digit_region_deletes_the_missing_digit():
    at, inserted = align(PLATE, "B840CK97")
    assert at[6] is None  # the pivot's "1" has no counterpart
    assert [at[i] for i in (7, 8)] == [6, 7]
    assert all(not gap for gap in inserted)


def test_align_a_three_digit_region_inserts_against_a_two_digit_pivot():
    at, inserted = align("B840CK97", PLATE)
    assert None not in at
    assert [k for gap in inserted for k in gap] == [6]  # the extra "1"


@given(st.text(alphabet="AB12", max_size=10), st.text(alphabet="AB12", max_size=10))
def test_align_uses_every_character_once_and_costs_the_edit_distance(pivot, text):
    at, inserted = align(pivot, text)
    used = sorted([k for k in at if k is not None] + [k for gap in inserted for k in gap])
    assert used == list(range(len(text)))
    substitutions = sum(1 for i, k in enumerate(at) if k is not None and pivot[i] != text[k])
    deletions = at.count(None)
    insertions = sum(len(gap) for gap in inserted)
    assert substitutions + deletions + insertions == edit_distance(pivot, text)
    # The aligned characters keep their order.
    aligned = [k for k in at if k is not None]
    assert aligned == sorted(aligned)


# --- voting ----------------------------------------------------------------------------------


def test_unanimous_reads_give_their_text_with_their_confidence():
    result = vote(reads(PLATE, PLATE, PLATE, confidence=0.8))
    assert result.text == PLATE
    assert result.confidence == pytest.approx(0.8)
    assert result.format_valid
    assert result.candidates[0].text == PLATE


def test_one_wrong_character_in_a_minority_of_reads_is_outvoted():
    result = vote(reads(PLATE, "B840OK197", PLATE, "B840CK197", "B846CK197"))
    assert result.text == PLATE
    assert result.confidence == pytest.approx(0.9 * 4 / 5)  # each wrong character: 4 reads of 5 agree
    texts = [c.text for c in result.candidates]
    assert "B840OK197" in texts and "B846CK197" in texts


def test_each_frame_wrong_somewhere_else_still_votes_right():
    """No single read is right, yet every character is right in most reads."""
    wrong = ["X840CK197", "B340CK197", "B810CK197", "B84OCK197", "B840XK197", "B840CY197"]
    assert PLATE not in wrong
    assert vote(reads(*wrong)).text == PLATE


def test_three_digit_region_wins_over_a_dropped_digit():
    result = vote(reads(PLATE, "B840CK97", PLATE, PLATE, "B840CK97"))
    assert result.text == PLATE
    assert "B840CK97" in [c.text for c in result.candidates]


def test_two_digit_region_wins_when_most_reads_have_two_digits():
    result = vote(reads("A123BC77", "A123BC177", "A123BC77"))
    assert result.text == "A123BC77"


def test_an_inserted_digit_voted_in_against_a_two_digit_pivot():
    # Two reads of 8 characters disagree elsewhere, so a 9-character read may be the pivot or not;
    # either way the region's third digit is there in most reads.
    result = vote(reads("A123BC177", "A123BC77", "A123BC177", "A723BC177"))
    assert result.text == "A123BC177"


def test_character_confidences_weigh_the_vote():
    sure = TextRead(PLATE, (0.99,) * 9)
    unsure = [TextRead("B840CK191", (0.99,) * 8 + (0.2,)), TextRead("B840CK191", (0.99,) * 8 + (0.25,))]
    assert vote([sure, *unsure]).text == PLATE  # 0.99 for "7" beats 0.45 for "1"
    assert vote([sure, unsure[0], TextRead("B840CK191", (0.99,) * 9)]).text == "B840CK191"


def test_a_format_valid_candidate_is_preferred_to_a_better_scoring_invalid_one():
    # "0" where a letter must be: the invalid text wins the raw vote, the valid one is chosen.
    result = vote(reads("B840C0197", "B840C0197", "B840CO197"))
    assert result.candidates[0].text == "B840C0197"
    assert result.text == "B840CO197"
    assert result.format_valid


def test_no_valid_candidate_keeps_the_best_text():
    result = vote(reads("HELLO", "HELLO", "HELL0"))
    assert result.text == "HELLO"
    assert not result.format_valid


def test_candidates_are_best_first_unique_and_capped():
    result = vote(reads(PLATE, "B840OK197", "A840CK197", "B840CK191", "B8400K197"), top=3)
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    assert len({c.text for c in result.candidates}) == len(result.candidates) == 3


def test_a_single_read_is_its_own_vote():
    result = vote([TextRead("A123BC77", (0.9, 0.8, 0.95, 0.9, 0.9, 0.9, 0.7, 0.9))])
    assert result.text == "A123BC77"
    assert result.confidence == pytest.approx(0.7)
    assert [c.text for c in result.candidates] == ["A123BC77"]


def test_nothing_to_vote_on_is_an_error():
    with pytest.raises(ValueError):
        vote([])
    with pytest.raises(ValueError):
        TextRead("AB", (0.5,))


plates = st.builds(
    lambda a, digits, bc, region: f"{a}{digits}{bc}{region}",
    st.sampled_from(LETTERS),
    st.from_regex(r"\d{3}", fullmatch=True),
    st.text(alphabet=LETTERS, min_size=2, max_size=2),
    st.from_regex(r"\d{2,3}", fullmatch=True),
)


@given(plates, st.integers(min_value=1, max_value=6), st.floats(min_value=0.05, max_value=1.0))
def test_any_number_of_identical_reads_votes_their_text(text, count, confidence):
    result = vote(reads(*[text] * count, confidence=confidence))
    assert result.text == text
    assert result.format_valid
    assert result.confidence == pytest.approx(confidence, abs=1e-4)


@given(plates, st.lists(st.tuples(st.integers(0, 8), st.sampled_from("0123456789" + LETTERS)), max_size=4))
def test_a_strict_majority_of_exact_reads_outvotes_single_substitutions(text, errors):
    """Each wrong read has one substituted character; the exact reads outnumber them all."""
    wrong = []
    for position, char in errors:
        position %= len(text)
        wrong.append(text[:position] + char + text[position + 1 :])
    exact = [text] * (len(wrong) + 1)
    assert vote(reads(*exact, *wrong)).text == text


@given(st.lists(plates, min_size=1, max_size=6))
def test_the_vote_is_a_candidate_and_scores_lie_in_0_1(texts):
    result = vote(reads(*texts))
    assert result.text in [c.text for c in result.candidates]
    assert all(0.0 <= c.score <= 1.0 for c in result.candidates)
    assert 0.0 <= result.confidence <= 1.0


def test_reads_garbled_beyond_a_third_of_the_text_are_left_out_of_the_vote():
    result = vote(reads(PLATE, PLATE, PLATE, "0HX7", "B1H72XE92", "Y808H10"))
    assert result.text == PLATE
    assert result.confidence == pytest.approx(0.9)  # as if only the three plates had voted
    # Two wrong characters of nine are still a vote.
    assert vote(reads("B840CK197", "B840CK197", "B846CK191", "B846CK191", "B846CK191")).text == "B846CK191"
