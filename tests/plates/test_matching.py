"""The matcher: weighted edit distance with the recognizer's cheap confusions, tolerances, candidates."""

from __future__ import annotations

import math
import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.watchlist import LATIN_PLATE_ALPHABET, PLATE_ALPHABET, WatchEntry
from stream_worker.plates.matching import (
    CHEAP_COST,
    CONFUSIONS,
    Match,
    Matcher,
    match,
    plate_distance,
    substitution_cost,
)

ADDED = datetime(2026, 3, 1, tzinfo=UTC)
LETTERS = "ABEKMHOPCTYX"
DIGITS = "0123456789"


def _entry(plate: str, max_distance: float | None = None, **fields: object) -> WatchEntry:
    return WatchEntry(plate=plate, list="stolen", max_distance=max_distance, added_at=ADDED, **fields)


def _plate(rng: random.Random) -> str:
    region = "".join(rng.choices(DIGITS, k=rng.choice((2, 3))))
    letters = rng.choices(LETTERS, k=3)
    return f"{letters[0]}{''.join(rng.choices(DIGITS, k=3))}{letters[1]}{letters[2]}{region}"


# --- costs and distance -------------------------------------------------------------------------
def test_the_issues_known_confusions_are_cheap() -> None:
    for pair in ("OC", "O0", "B8"):
        assert frozenset(pair) in CONFUSIONS
        assert substitution_cost(pair[0], pair[1]) == substitution_cost(pair[1], pair[0]) == CHEAP_COST


def test_the_measured_confusions_are_cheap_and_nothing_else() -> None:
    measured = {frozenset("54"), frozenset("EY")}
    reported = {frozenset("OC"), frozenset("O0"), frozenset("B8")}
    latin = {frozenset(pair) for pair in ("O0", "I1", "B8", "D0", "S5", "Z2", "DO")}
    assert measured | reported | latin == CONFUSIONS
    assert substitution_cost("K", "C") == substitution_cost("C", "0") == substitution_cost("8", "3") == 1.0


def test_confusions_are_pairs_of_the_recognizers_characters() -> None:
    for pair in CONFUSIONS:
        assert len(pair) == 2 and set(pair) <= set(LATIN_PLATE_ALPHABET)


@pytest.mark.parametrize("pair", sorted("".join(sorted(pair)) for pair in CONFUSIONS))
def test_each_cheap_confusion_costs_half_in_a_plate(pair: str) -> None:
    a, b = pair
    listed = f"X{a}{a}{a}MM77"
    for position in range(1, 4):
        read = listed[:position] + b + listed[position + 1 :]
        assert plate_distance(read, listed) == CHEAP_COST
        assert plate_distance(listed, read) == CHEAP_COST


def test_latin_look_alikes_are_cheap_and_a_different_letter_is_not() -> None:
    # A French AB-123-CD read with each look-alike of the CCT recognizer.
    listed = "AB123CD"
    for read in ("A8123CD", "ABI23CD", "AB123C0", "AB123CO", "AB1Z3CD"):
        assert plate_distance(read, listed) == CHEAP_COST, read
    assert plate_distance("5UW999", "SUW999") == CHEAP_COST
    assert plate_distance("AB123CE", listed) == 1.0
    assert plate_distance("ABT23CD", listed) == 1.0  # I/T was measured, but is not cheap


def test_a_latin_plate_on_the_list_matches_its_look_alike_reads_in_any_spelling() -> None:
    matcher = Matcher([_entry("ab-123.cd"), _entry("в 840 ск 197")], default_max_distance=1.0)
    (found,) = matcher.match("A8-I23-CD")
    assert (found.entry.plate, found.kind, found.distance, found.candidate) == (
        "AB123CD",
        MatchKind.FUZZY,
        1.0,
        "A8I23CD",
    )
    assert matcher.match("A8I23C0") == []  # three look-alikes: 1.5, beyond the default
    assert [m.entry.plate for m in matcher.match("AB.123.CD")] == ["AB123CD"]
    assert [m.kind for m in matcher.match("AB.123.CD")] == [MatchKind.EXACT]
    assert [m.entry.plate for m in matcher.match("B840OK197")] == ["B840CK197"]


def test_ordinary_substitutions_cost_one() -> None:
    assert substitution_cost("H", "K") == 1.0
    assert plate_distance("B840HK197", "B840CK197") == 1.0
    assert plate_distance("A123BC77", "A124BC77") == 1.0


def test_identical_is_zero() -> None:
    assert plate_distance("B840CK197", "B840CK197") == 0.0
    assert substitution_cost("A", "A") == 0.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("B840CK19", "B840CK197", 1.0),  # a region digit lost
        ("B840CK1977", "B840CK197", 1.0),  # one read twice
        ("B40CK197", "B840CK197", 1.0),
        ("840CK197", "B840CK197", 1.0),  # the first letter lost
        ("B840CK", "B840CK197", 3.0),
        ("", "A123BC", 6.0),
        ("B840OK19", "B840CK197", 1.5),  # a cheap confusion and a deletion
        ("B84OOK197", "B840CK197", 1.0),  # two cheap confusions
        ("A123BC77", "X987MH12", 8.0),
    ],
)
def test_insertions_deletions_and_mixtures(a: str, b: str, expected: float) -> None:
    assert plate_distance(a, b) == expected
    assert plate_distance(b, a) == expected


def test_distance_stops_early_beyond_the_limit() -> None:
    assert plate_distance("A123BC77", "X987MH12", limit=2.0) == math.inf
    assert plate_distance("B840CK197", "B840CK", limit=2.9) == math.inf  # the length alone
    assert plate_distance("B840OK197", "B840CK197", limit=0.5) == 0.5
    assert plate_distance("B840OK197", "B840CK197", limit=0.4) == math.inf


def test_distance_agrees_with_a_plain_full_table() -> None:
    def reference(a: str, b: str) -> float:
        table = [[0.0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a) + 1):
            table[i][0] = float(i)
        for j in range(len(b) + 1):
            table[0][j] = float(j)
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = min(
                    table[i - 1][j] + 1,
                    table[i][j - 1] + 1,
                    table[i - 1][j - 1] + substitution_cost(a[i - 1], b[j - 1]),
                )
        return table[-1][-1]

    rng = random.Random(20)
    for _ in range(300):
        a = _plate(rng)
        b = "".join(
            rng.choice(PLATE_ALPHABET) if rng.random() < 0.25 else char for char in a if rng.random() > 0.1
        )
        expected = reference(a, b)
        assert plate_distance(a, b) == expected
        limit = rng.choice((0.0, 0.5, 1.0, 1.5, 2.0))
        assert plate_distance(a, b, limit) == (expected if expected <= limit else math.inf)


# --- match ----------------------------------------------------------------------------------------
def test_exact_match() -> None:
    entry = _entry("B840CK197")
    assert match("B840CK197", [entry], 1.0) == [Match(entry, MatchKind.EXACT, 0.0, "B840CK197", 0)]


def test_the_sample_van_matches_fuzzily_at_the_cheap_cost() -> None:
    entry = _entry("B840CK197")
    (found,) = match("B840OK197", [entry], 1.0)
    assert (found.kind, found.distance, found.entry, found.candidate) == (
        MatchKind.FUZZY,
        CHEAP_COST,
        entry,
        "B840OK197",
    )
    assert match("B840OK197", [entry], CHEAP_COST) == [found]  # within even a strict default


def test_an_ordinary_substitution_needs_a_tolerance_of_one() -> None:
    entry = _entry("B840CK197")
    assert match("B840HK197", [entry], CHEAP_COST) == []
    assert [m.distance for m in match("B840HK197", [entry], 1.0)] == [1.0]


@pytest.mark.parametrize(
    ("read", "distance"),
    [("B840CK19", 1.0), ("B840CK1977", 1.0), ("840CK197", 1.0), ("B840CK7", 2.0), ("B80CK97", 2.0)],
)
def test_insertions_and_deletions(read: str, distance: float) -> None:
    entry = _entry("B840CK197")
    assert [m.distance for m in match(read, [entry], distance)] == [distance]
    assert match(read, [entry], distance - CHEAP_COST) == []


@pytest.mark.parametrize(
    ("tolerance", "matches"),
    [(0.0, False), (0.49, False), (0.5, True), (0.51, True), (1.0, True)],
)
def test_tolerance_boundary_is_inclusive(tolerance: float, matches: bool) -> None:
    assert bool(match("B840OK197", [_entry("B840CK197")], tolerance)) is matches


def test_an_entrys_own_tolerance_overrides_the_default() -> None:
    strict, lenient, default = _entry("B840CK197", 0.0), _entry("A123BC77", 2.0), _entry("X001XX99")
    entries = [strict, lenient, default]
    assert match("B840OK197", entries, 1.0) == []  # strict: exact only
    assert match("B840CK197", entries, 1.0)[0].kind is MatchKind.EXACT  # exact still matches
    assert [m.distance for m in match("A123BC7", entries, 0.0)] == [1.0]  # a lost digit, lenient
    assert [m.distance for m in match("A12BC7", entries, 0.0)] == [2.0]
    assert match("A1BC7", entries, 0.0) == []
    assert [m.entry for m in match("X001XX999", entries, 1.0)] == [default]  # 9 inserted: 1.0
    assert match("X001XX999", entries, 0.5) == []


def test_reads_are_normalised_before_matching() -> None:
    entry = _entry("B840CK197")
    assert match("в 840 ск-197", [entry], 0.0)[0].kind is MatchKind.EXACT


def test_several_entries_closest_first() -> None:
    near, nearer, far = _entry("B840CK197"), _entry("B840OK197"), _entry("B840HH197")
    found = match("B840OK197", [far, near, nearer], 2.0)
    assert [(m.entry.plate, m.distance) for m in found] == [
        ("B840OK197", 0.0),
        ("B840CK197", 0.5),
        ("B840HH197", 2.0),
    ]


def test_candidates_report_which_one_matched() -> None:
    van, car = _entry("B840CK197"), _entry("A123BC77")
    found = match(["B840OK197", "A123BC77", "B840CK197"], [van, car], 1.0)
    assert [(m.entry.plate, m.kind, m.candidate, m.candidate_index) for m in found] == [
        ("A123BC77", MatchKind.EXACT, "A123BC77", 1),
        ("B840CK197", MatchKind.EXACT, "B840CK197", 2),  # the closer candidate wins
    ]


def test_candidates_tie_goes_to_the_earlier_one() -> None:
    (found,) = match(["B840OK197", "B840C8197"], [_entry("B840CK197")], 1.0)
    assert (found.candidate, found.candidate_index, found.distance) == ("B840OK197", 0, 0.5)


def test_no_candidates_no_match() -> None:
    assert match([], [_entry("B840CK197")], 1.0) == []
    assert match("B840CK197", [], 1.0) == []


def test_expired_entries_never_match_when_now_is_given() -> None:
    entry = _entry("B840CK197", expires_at=ADDED + timedelta(days=1))
    assert match("B840CK197", [entry], 1.0, now=ADDED + timedelta(days=2)) == []
    assert match("B840OK197", [entry], 1.0, now=ADDED + timedelta(days=2)) == []
    assert len(match("B840CK197", [entry], 1.0, now=ADDED)) == 1
    assert len(match("B840CK197", [entry], 1.0)) == 1  # no clock: no expiry


def test_matcher_takes_the_store_dict_and_refuses_a_negative_default() -> None:
    entry = _entry("B840CK197")
    matcher = Matcher({entry.plate: entry}, 1.0)
    assert len(matcher) == 1 and matcher.match("B840OK197")[0].entry == entry
    with pytest.raises(ValueError, match="default_max_distance"):
        Matcher([], -1.0)


def _mutate(rng: random.Random, plate: str, edits: int) -> str:
    """`plate` with `edits` random substitutions (cheap confusions among them), deletions, insertions."""
    chars = list(plate)
    cheap = {a: b for pair in CONFUSIONS for a, b in (tuple(pair), tuple(pair)[::-1])}
    for _ in range(edits):
        position = rng.randrange(len(chars))
        kind = rng.choice(("cheap", "substitute", "delete", "insert"))
        if kind == "cheap" and chars[position] in cheap:
            chars[position] = cheap[chars[position]]
        elif kind == "delete" and len(chars) > 1:
            del chars[position]
        elif kind == "insert":
            chars.insert(position, rng.choice(PLATE_ALPHABET))
        else:
            chars[position] = rng.choice(PLATE_ALPHABET)
    return "".join(chars)


def test_the_index_never_drops_a_match() -> None:
    rng = random.Random(7)
    bases = [_plate(rng) for _ in range(20)]
    # Clusters of near plates, so that a read is near several entries with different tolerances.
    plates = {_mutate(rng, base, rng.randrange(3)) for base in bases for _ in range(8)}
    plates = {plate for plate in plates if 6 <= len(plate) <= 9}
    tolerances = (None, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
    entries = {plate: _entry(plate, rng.choice(tolerances)) for plate in plates}
    matcher = Matcher(entries, 1.0)
    found = 0
    for _ in range(150):
        read = _mutate(rng, rng.choice(bases), rng.randrange(4))
        expected = {
            plate: plate_distance(read, plate)
            for plate, entry in entries.items()
            if plate_distance(read, plate) <= (1.0 if entry.max_distance is None else entry.max_distance)
        }
        assert {m.entry.plate: m.distance for m in matcher.match(read)} == expected, read
        found += len(expected)
    assert found > 150  # the reads did land near entries


def test_thousands_of_entries_are_fast() -> None:
    rng = random.Random(1)
    entries = [_entry(_plate(rng)) for _ in range(10_000)]
    matcher = Matcher(entries, 1.0)
    reads = [[_plate(rng) for _ in range(3)] for _ in range(50)] + [[entries[5].plate]]
    started = time.perf_counter()
    for candidates in reads:
        matcher.match(candidates)
    per_sighting = (time.perf_counter() - started) / len(reads)
    assert per_sighting < 0.005, f"{per_sighting * 1000:.1f} ms per sighting of 3 candidates"


def test_allow_entries_never_alert_and_watch_entries_never_allow() -> None:
    from stream_worker.contracts.watchlist import WatchKind

    entries = [_entry("B840CK197"), _entry("A123BC77", kind=WatchKind.ALLOW)]
    watching, allowing = Matcher(entries, 1.0), Matcher(entries, 1.0, WatchKind.ALLOW)
    assert [m.entry.plate for m in watching.match(["B840CK197", "A123BC77"])] == ["B840CK197"]
    assert [m.entry.plate for m in allowing.match(["B840CK197", "A123BO77"])] == ["A123BC77"]
