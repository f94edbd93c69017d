"""plate_keys: the folded key of a plate and its deletion variants, the fuzzy search's index."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_worker.contracts.watchlist import LATIN_PLATE_ALPHABET, PLATE_ALPHABET, normalise_plate
from stream_worker.plates.matching import CHEAP_COST, CONFUSIONS, EDIT_COST, plate_distance
from stream_worker.store.plate_keys import EDITS, MAX_KEY_LENGTH, fold, spellings, variants

# The groups the cheap pairs chain into (O/C, O/0, D/0 and D/O make one group of four).
CLASSES = [{"0", "C", "D", "O"}, {"8", "B"}, {"4", "5", "S"}, {"E", "Y"}, {"1", "I"}, {"2", "Z"}]
# The widest tolerance one stored deletion per key serves: below two whole edits.
WIDEST = 2 * EDIT_COST - CHEAP_COST


# --- fold ---------------------------------------------------------------------------------------
def test_the_classes_are_the_matchers_confusions_chained() -> None:
    assert all(any(pair <= group for group in CLASSES) for pair in CONFUSIONS)
    assert set().union(*CLASSES) == set().union(*CONFUSIONS)


@pytest.mark.parametrize("a", LATIN_PLATE_ALPHABET)
@pytest.mark.parametrize("b", LATIN_PLATE_ALPHABET)
def test_two_characters_fold_equal_exactly_when_they_are_in_one_class(a: str, b: str) -> None:
    same_class = a == b or any(a in group and b in group for group in CLASSES)
    assert (fold(a) == fold(b)) is same_class


@pytest.mark.parametrize("group", CLASSES, ids=lambda group: "".join(sorted(group)))
def test_every_member_of_a_class_folds_to_one_member_of_it(group: set[str]) -> None:
    folded = {fold(char) for char in group}
    assert len(folded) == 1
    assert folded <= group


def test_characters_outside_the_classes_are_kept() -> None:
    plain = "".join(char for char in PLATE_ALPHABET if not any(char in group for group in CLASSES))
    assert plain == "3679AKMHPTX"
    assert fold(plain) == plain
    latin = "".join(char for char in LATIN_PLATE_ALPHABET if not any(char in group for group in CLASSES))
    assert fold(latin) == latin


def test_the_issues_sample_and_its_misread_share_a_key() -> None:
    assert fold("B840CK197") == fold("B840OK197") == fold("8840CK197") == "88400K197"
    assert fold("B840HK197") != fold("B840CK197")


def test_a_latin_plate_and_its_look_alike_reads_share_a_key() -> None:
    # O/0, I/1, B/8, D/0, S/5, Z/2; separators (dots too) ignored.
    assert fold("AB-123.CD") == fold("A8I23C0") == fold("ab 1z3 co") == "A81230O".replace("O", "0")
    assert fold("SUW999") == fold("5UW999") and fold("SUW999") != fold("TUW999")


def test_fold_normalises_first() -> None:
    # Cyrillic look-alikes (lowercase too), spaces, hyphens and Unicode dashes.
    assert fold("в 840 ск 197") == fold("B840CK197")
    assert fold("b840-ok\u2013197") == fold("B840CK197")
    assert fold("\u0412840\u0421\u041a197") == fold("B840CK197")


def test_fold_of_nothing_is_nothing() -> None:
    assert fold("") == ""
    assert fold(" - ") == ""


def test_fold_keeps_characters_the_recognizer_never_reads() -> None:
    # Not a validator: a foreign character stays (and never equals a plate character).
    assert fold("A1!") == "A1!"
    assert fold("Ж123") == "Ж123"


@given(st.text(alphabet=PLATE_ALPHABET + "abcxyz авс -", max_size=12))
def test_fold_is_idempotent_and_keeps_the_length_of_the_normalised_text(text: str) -> None:
    folded = fold(text)
    assert fold(folded) == folded
    assert len(folded) == len(normalise_plate(text))


@given(st.text(alphabet=PLATE_ALPHABET, max_size=10), st.text(alphabet=PLATE_ALPHABET, max_size=10))
def test_equal_keys_mean_only_cheap_substitutions_apart(a: str, b: str) -> None:
    if fold(a) == fold(b):
        assert plate_distance(a, b) == CHEAP_COST * sum(x != y for x, y in zip(a, b, strict=True))


# --- variants -----------------------------------------------------------------------------------
def test_variants_of_the_sample() -> None:
    assert variants("88400K197") == {
        "88400K197",
        "8400K197",
        "8800K197",
        "88400197",
        "88400K17",
        "88400K19",
        "88400K97",
        "8840K197",
    }


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("", {""}),
        ("A", {"A", ""}),
        ("AA", {"AA", "A"}),
        ("AK", {"AK", "A", "K"}),
        ("000", {"000", "00"}),
        ("A1A", {"A1A", "1A", "AA", "A1"}),
    ],
)
def test_variants_at_the_short_end(key: str, expected: set[str]) -> None:
    assert variants(key) == expected


@pytest.mark.parametrize("length", range(6, 10))
def test_a_plate_of_distinct_characters_has_one_variant_per_character_plus_itself(length: int) -> None:
    key = "0123456789"[:length]
    assert len(variants(key)) == length + 1
    assert all(len(variant) == length - 1 for variant in variants(key) - {key})


def test_edits_zero_is_the_key_alone_and_two_adds_the_double_deletions() -> None:
    assert variants("AKM", edits=0) == {"AKM"}
    assert variants("AKM", edits=2) == {"AKM", "KM", "AM", "AK", "A", "K", "M"}
    assert EDITS == 1
    assert variants("AKM") == variants("AKM", edits=EDITS)


def test_negative_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="edits"):
        variants("AKM", edits=-1)


def test_variants_fit_the_column() -> None:
    # plate_variants.variant is String(32): a variant is never longer than its key.
    assert max(len(variant) for variant in variants("A" * 32)) == 32


# --- the property the search relies on ----------------------------------------------------------
def _share(a: str, b: str) -> bool:
    return bool(variants(fold(a)) & variants(fold(b)))


def test_every_pair_of_short_texts_within_the_widest_tolerance_shares_a_variant() -> None:
    # Exhaustive over a small alphabet with every class represented, up to three characters.
    alphabet = "0OC8B45EYAK"
    texts = ["".join(chars) for length in range(4) for chars in itertools.product(alphabet, repeat=length)]
    near = 0
    for a, b in itertools.combinations(texts, 2):
        if plate_distance(a, b, WIDEST) <= WIDEST:
            near += 1
            assert _share(a, b), (a, b)
    assert near > 1000  # the check did compare many near pairs


def test_sharing_a_variant_does_not_mean_near_so_the_search_verifies() -> None:
    # Two whole edits (a transposition) and four cheap ones: both share a variant, both are 2.0 away.
    assert _share("ABK", "AKB") and plate_distance("ABK", "AKB") == 2.0
    assert _share("B840CK197", "8B4OOK197") and plate_distance("B840CK197", "8B4OOK197") == 2.0


_CHEAP_SWAP = {char: sorted(group - {char}) for group in CLASSES for char in group}
_plates = st.text(alphabet=PLATE_ALPHABET, min_size=0, max_size=10)


@st.composite
def _near_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A text and another made from it by any cheap substitutions and at most one whole edit."""
    text = draw(_plates)
    chars = list(text)
    for index, char in enumerate(chars):
        if char in _CHEAP_SWAP and draw(st.booleans()):
            chars[index] = draw(st.sampled_from(_CHEAP_SWAP[char]))
    edit = draw(st.sampled_from(["none", "substitute", "insert", "delete"]))
    position = draw(st.integers(min_value=0, max_value=len(chars)))
    char = draw(st.sampled_from(PLATE_ALPHABET))
    if edit == "substitute" and position < len(chars):
        chars[position] = char
    elif edit == "insert":
        chars.insert(position, char)
    elif edit == "delete" and position < len(chars):
        del chars[position]
    return text, "".join(chars)


@given(_near_pairs())
def test_one_whole_edit_and_any_cheap_ones_share_a_variant(pair: tuple[str, str]) -> None:
    a, b = pair
    assert _share(a, b)
    assert _share(b, a)


@given(_near_pairs())
def test_any_text_within_the_default_tolerance_shares_a_variant(pair: tuple[str, str]) -> None:
    # Stated on the matcher's own distance, as the search uses it (default max_distance 1.0).
    a, b = pair
    if plate_distance(a, b) <= 1.0:
        assert _share(a, b)


@given(_plates, _plates)
def test_any_two_texts_within_the_widest_tolerance_share_a_variant(a: str, b: str) -> None:
    if plate_distance(a, b, WIDEST) <= WIDEST:
        assert _share(a, b)


@given(_plates, st.sampled_from(["", " ", "-", "\u2014"]), st.booleans())
def test_spelling_does_not_change_the_variants(text: str, separator: str, lower: bool) -> None:
    spelled = separator.join(text)
    spelled = spelled.lower() if lower else spelled
    assert variants(fold(spelled)) == variants(fold(text))


# --- spellings ----------------------------------------------------------------------------------
def test_spellings_of_the_sample() -> None:
    spelled = spellings(fold("B840CK197"), 1000)
    # B/8, 8/B, 4/5/S, 0/O/C/D, C/O/0/D, 1/I
    assert spelled is not None and len(spelled) == 2 * 2 * 3 * 4 * 4 * 2
    assert {"B840CK197", "B840OK197", "8840CK197", "B850CK197"} <= set(spelled)
    assert spelled == sorted(spelled)


@pytest.mark.parametrize("length", [0, 1, 2, 3])
def test_spellings_are_exactly_the_texts_that_fold_to_the_key(length: int) -> None:
    # Exhaustive over the whole alphabet for short texts.
    texts = ["".join(chars) for chars in itertools.product(LATIN_PLATE_ALPHABET, repeat=length)]
    by_key: dict[str, set[str]] = {}
    for text in texts:
        by_key.setdefault(fold(text), set()).add(text)
    for key, folded in by_key.items():
        assert spellings(key, 10_000) == sorted(folded)


def test_spellings_beyond_the_limit_are_none() -> None:
    assert spellings("000", 64) is not None and len(spellings("000", 64) or []) == 64
    assert spellings("000", 63) is None
    assert spellings("AKMHPTX", 1) == ["AKMHPTX"]
    assert spellings("0" * 30, 10**6) is None  # 4**30: stops counting, builds nothing


def test_the_index_is_bounded_per_plate():
    # One 10,000-character text made 10,110 rows. A stored key has at most MAX_KEY_LENGTH
    # characters (the writer refuses longer ones), so a plate brings at most MAX_KEY_LENGTH + 1 rows.
    assert len(variants("A" * (MAX_KEY_LENGTH - 1) + "B")) == 3  # the key, one without a A, one without B
    assert len(variants("".join(chr(ord("A") + k % 26) for k in range(MAX_KEY_LENGTH)))) <= MAX_KEY_LENGTH + 1
    with pytest.raises(ValueError, match="the index holds keys of 32 at most"):
        variants("A" * 10_000)
