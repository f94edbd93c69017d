"""Match a read plate (or a voted sighting's candidates) against the watch list, tolerating misreads.

The distance is an edit distance in which inserting, deleting or substituting a character costs
1.0, except substituting one of the recognizer's known confusions, which costs `CHEAP_COST`: a
read `B840OK197` is 0.5 from the listed `B840CK197`, while a real different plate (`B840HK197`)
is 1.0 away. An entry matches when the distance is within its own `max_distance`, else the
caller's default.

The cheap confusions were measured on the scenes evaluation set (`LPR_WEIGHTS_DIR=../shared/weights
stream-worker eval ../shared/evalset/scenes --report ...`, 60 photos, 61 labelled texts, 57 read
exactly, 12 character edits in 507): each wrong read aligned with its label by a unit-cost edit
distance, the substituted pairs counted, both directions together:

    pair  substitutions
    5/4   1
    E/Y   1

Left out: the one photo labelled without boxes, whose reads are paired with the labels by the
closest text (a 7-edit pairing, and K/C, I/1 against a label its source marks doubtful; I is not
even in the alphabet). To these the pairs the issue reports from the field are added: O/C, O/0,
B/8 (the sample van B840CK197 read as B840OK197). Thin evidence, all of it: re-measure with
`eval --report` on a larger labelled set before widening the cheap set.

Latin plates (the CCT recognizer, docs/regions.md "Plates of other countries: formats"): the look-alikes the
issue names, O/0, I/1, B/8, D/0, S/5, Z/2, and D/O, which it reports among the CCT's misses. Measured
the same way on the plain argmax reads of `../shared/plates-world` (398 US and Argentine crops, 55
misread):

    pair  substitutions        pair  substitutions
    O/0   12                   D/O   2
    I/1   3                    B/8, D/0, Z/2   1 each
    I/T   3                    M/N, E/L   2 each (not made cheap: letters a format does not settle)

S/5 was not seen (S/9 once); it stays on the issue's word.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.watchlist import WatchEntry, WatchKind, normalise_plate

CHEAP_COST = 0.5
EDIT_COST = 1.0
# Unordered pairs: a substitution either way costs CHEAP_COST.
MEASURED_CONFUSIONS = ("54", "EY")  # counts in the module docstring
REPORTED_CONFUSIONS = ("OC", "O0", "B8")
LATIN_CONFUSIONS = ("O0", "I1", "B8", "D0", "S5", "Z2", "DO")  # measured in the docstring
CONFUSIONS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair) for pair in (*MEASURED_CONFUSIONS, *REPORTED_CONFUSIONS, *LATIN_CONFUSIONS)
)
# Entries tolerating more whole edits than this are compared one by one instead of indexed.
MAX_INDEXED_EDITS = 2
_EPSILON = 1e-9  # costs are multiples of 0.5, exact in binary; this only guards the comparison


def substitution_cost(a: str, b: str) -> float:
    if a == b:
        return 0.0
    return CHEAP_COST if frozenset((a, b)) in CONFUSIONS else EDIT_COST


def plate_distance(a: str, b: str, limit: float = math.inf) -> float:
    """The weighted edit distance between two normalised plates; once it is sure to exceed `limit`
    it stops and returns `math.inf`."""
    if a == b:
        return 0.0
    if abs(len(a) - len(b)) * EDIT_COST > limit + _EPSILON:
        return math.inf
    previous = [index * EDIT_COST for index in range(len(b) + 1)]
    for i, char_a in enumerate(a, start=1):
        current = [i * EDIT_COST]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(
                    previous[j] + EDIT_COST,  # delete char_a
                    current[j - 1] + EDIT_COST,  # insert char_b
                    previous[j - 1] + substitution_cost(char_a, char_b),
                )
            )
        if min(current) > limit + _EPSILON:
            return math.inf
        previous = current
    distance = previous[-1]
    return distance if distance <= limit + _EPSILON else math.inf


@dataclass(frozen=True, slots=True)
class Match:
    """A watch-list entry that a read matched: which candidate text, how far from the entry."""

    entry: WatchEntry
    kind: MatchKind
    distance: float
    candidate: str  # the normalised read text that matched
    candidate_index: int  # its position among the texts given (0: the only or the best one)


def _confusion_classes() -> dict[str, str]:
    """Each character of a cheap pair -> one representative of its group (pairs chained: O/C, O/0
    and D/0 put C, D, O and 0 in one group)."""
    groups: list[set[str]] = []
    for pair in CONFUSIONS:
        joined = set(pair).union(*(group for group in groups if group & pair))
        groups = [group for group in groups if not group & pair] + [joined]
    return {char: min(group) for group in groups for char in group}


_CANONICAL = str.maketrans(_confusion_classes())


def canonical(text: str) -> str:
    """The text with every cheap confusion made equal: its plain edit distance to another
    canonical text is at most the weighted distance between the originals."""
    return text.translate(_CANONICAL)


def deletions(text: str, edits: int) -> set[str]:
    """`text` with up to `edits` characters deleted, every way."""
    variants = frontier = {text}
    for _ in range(edits):
        frontier = {variant[:i] + variant[i + 1 :] for variant in frontier for i in range(len(variant))}
        variants = variants | frontier
    return variants


class Matcher:
    """The watch list prepared for matching many reads: built once per version of the list.

    A weighted distance within a tolerance t leaves at most floor(t) edits that are not cheap
    confusions, so a read and an entry within it share a string made by deleting at most floor(t)
    characters from each of their canonical forms (a symmetric-deletion index). The index gives
    the few entries worth the edit distance; entries tolerating more than MAX_INDEXED_EDITS edits
    (rare, and an index of all their deletions would be large) are compared one by one.
    """

    def __init__(
        self,
        entries: Iterable[WatchEntry] | Mapping[str, WatchEntry],
        default_max_distance: float,
        kind: WatchKind = WatchKind.WATCH,
    ):
        """Over the entries of `kind` only: an allow entry never alerts, a watch entry never allows."""
        if default_max_distance < 0:
            raise ValueError(f"default_max_distance must be >= 0, got {default_max_distance}")
        values = entries.values() if isinstance(entries, Mapping) else entries
        self.default_max_distance = default_max_distance
        self._by_plate: dict[str, WatchEntry] = {
            entry.plate: entry for entry in values if entry.effective_kind is kind
        }
        self._index: dict[str, list[WatchEntry]] = {}
        self._unindexed: list[WatchEntry] = []
        self._query_edits = 0
        for entry in self._by_plate.values():
            edits = self._edits(entry)
            if edits > MAX_INDEXED_EDITS:
                self._unindexed.append(entry)
                continue
            self._query_edits = max(self._query_edits, edits)
            for variant in deletions(canonical(entry.plate), edits):
                self._index.setdefault(variant, []).append(entry)

    def __len__(self) -> int:
        return len(self._by_plate)

    def tolerance(self, entry: WatchEntry) -> float:
        return self.default_max_distance if entry.max_distance is None else entry.max_distance

    def _edits(self, entry: WatchEntry) -> int:
        return int((self.tolerance(entry) + _EPSILON) // EDIT_COST)

    def match(self, texts: str | Sequence[str], now: datetime | None = None) -> list[Match]:
        """The entries that any of `texts` matches (a read, or a sighting's candidates best first),
        each once with its closest candidate (the earlier one on a tie), closest first. With `now`,
        expired entries never match."""
        candidates = [texts] if isinstance(texts, str) else list(texts)
        best: dict[str, Match] = {}
        for index, raw in enumerate(candidates):
            text = normalise_plate(raw)
            for entry, distance in self._near(text):
                if now is not None and entry.is_expired(now):
                    continue
                known = best.get(entry.plate)
                if known is None or distance < known.distance - _EPSILON:
                    kind = MatchKind.EXACT if distance == 0 else MatchKind.FUZZY
                    best[entry.plate] = Match(entry, kind, distance, text, index)
        return sorted(best.values(), key=lambda match: (match.distance, match.entry.plate))

    def _near(self, text: str) -> Iterable[tuple[WatchEntry, float]]:
        exact = self._by_plate.get(text)
        if exact is not None:
            yield exact, 0.0
        seen = {text}
        indexed = (
            entry
            for variant in deletions(canonical(text), self._query_edits)
            for entry in self._index.get(variant, ())
        )
        for entry in itertools.chain(indexed, self._unindexed):
            if entry.plate in seen:
                continue
            seen.add(entry.plate)
            limit = self.tolerance(entry)
            distance = plate_distance(text, entry.plate, limit)
            if distance <= limit + _EPSILON:
                yield entry, distance


def match(
    texts: str | Sequence[str],
    entries: Iterable[WatchEntry] | Mapping[str, WatchEntry],
    default_max_distance: float,
    now: datetime | None = None,
) -> list[Match]:
    """One-off `Matcher(entries, default_max_distance).match(texts, now)`; build a `Matcher` once
    to match many reads against the same list."""
    return Matcher(entries, default_max_distance).match(texts, now)
