"""Which watch-list entries a voted sighting matches: its top candidates and its voted text, with the
same `Matcher` (and so the same tolerances) as the reads."""

from __future__ import annotations

from dataclasses import dataclass

from stream_worker.contracts import PlateSighting
from stream_worker.plates.matching import Match, Matcher


@dataclass(frozen=True, slots=True)
class RankedText:
    rank: int  # the text's index in the sighting's candidates (0: the best)
    text: str
    score: float  # its vote score


@dataclass(frozen=True, slots=True)
class SightingMatch:
    match: Match  # `match.candidate` is the normalised text of `ranked`
    ranked: RankedText


def ranked_texts(sighting: PlateSighting, top: int) -> list[RankedText]:
    """The sighting's `top` best candidates, best first, then its voted text when it ranks lower (the
    voted text is the first format-valid candidate, not always the best one). A voted text missing
    from its candidates ranks after all of them, with the sighting's confidence as its score."""
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    ranked = [RankedText(rank, c.text, c.score) for rank, c in enumerate(sighting.candidates[:top])]
    if all(item.text != sighting.text for item in ranked):
        voted = next(
            (
                RankedText(rank, c.text, c.score)
                for rank, c in enumerate(sighting.candidates)
                if c.text == sighting.text
            ),
            RankedText(len(sighting.candidates), sighting.text, sighting.confidence),
        )
        ranked.append(voted)
    return ranked


def match_sighting(sighting: PlateSighting, matcher: Matcher, top: int) -> list[SightingMatch]:
    """The entries that the sighting's ranked texts match, each once with its closest text (the
    better ranked on a tie), closest first. An entry expired at the pass's first read never matches."""
    ranked = ranked_texts(sighting, top)
    matches = matcher.match([item.text for item in ranked], now=sighting.first_seen)
    return [SightingMatch(match, ranked[match.candidate_index]) for match in matches]
