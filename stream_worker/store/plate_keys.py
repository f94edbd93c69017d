"""Keys that make the history store's fuzzy plate search an index lookup instead of a table scan.

`fold(text)` writes a plate the way the recognizers would (`normalise_plate`) with every cheap
confusion of the watch-list matcher made equal (O/C/D/0, B/8, S/5/4, E/Y, I/1, Z/2:
`plates.matching.canonical`):
the sightings' `text_key` column. `variants(key)` is the key and every string made by deleting
one character from it: the `plate_variants` rows written beside each distinct key.

Why it finds everything a search should: a weighted distance (`plates.matching.plate_distance`)
below 2.0 leaves at most one edit that is not a cheap confusion, and folding removes the cheap
ones, so two folded keys are at most one plain edit apart; a substitution or an insertion of one
character is undone by deleting one character on each side (symmetric deletion). So every text
within 1.5 (or the default 1.0) of a query shares a variant with it; the search then keeps only
the texts whose real weighted distance is within its tolerance.
"""

from __future__ import annotations

import itertools

from stream_worker.contracts.watchlist import normalise_plate
from stream_worker.plates.matching import CONFUSIONS, canonical, deletions
from stream_worker.store.schema import PLATE

# The deletions stored per key: the widest tolerance a fuzzy search can honour is below EDITS + 1.
EDITS = 1
# The longest key the index holds (its column): so a plate brings at most MAX_KEY_LENGTH + 1 rows
# (the key and each one-character deletion), whatever text a record carries (one text of
# 10,000 characters made 10,110 rows). The writer refuses a longer key (writer.unwritable).
MAX_KEY_LENGTH = PLATE
# Each class's representative (what `fold` writes) -> every character folded to it.
_CLASSES: dict[str, str] = {}
for _char in sorted({char for pair in CONFUSIONS for char in pair}):
    _CLASSES[canonical(_char)] = _CLASSES.get(canonical(_char), "") + _char


def fold(text: str) -> str:
    """The plate normalised, its cheap confusions made equal: `в 840 ск 197` -> `88400K197`, the
    key of `B840CK197`, `B840OK197` and `8840CK197` alike."""
    return canonical(normalise_plate(text))


def variants(key: str, edits: int = EDITS) -> frozenset[str]:
    """`key` (a `fold` result) and every string made by deleting up to `edits` of its characters."""
    if edits < 0:
        raise ValueError(f"edits must be >= 0, got {edits}")
    if len(key) > MAX_KEY_LENGTH + edits:
        raise ValueError(f"a key of {len(key)} characters: the index holds keys of {MAX_KEY_LENGTH} at most")
    return frozenset(deletions(key, edits))


def spellings(key: str, limit: int) -> list[str] | None:
    """Every text in the recognizers' spelling (normalised) that folds to `key`, sorted; None when
    there are more than `limit` (a key of many confusable characters: 4 * 2 * ... of them)."""
    choices = [_CLASSES.get(char, char) for char in key]
    count = 1
    for options in choices:
        count *= len(options)
        if count > limit:
            return None
    return sorted("".join(chars) for chars in itertools.product(*choices))
