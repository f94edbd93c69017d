"""The sightings side of the alerts service, without Kafka: which of a voted sighting's texts count
(candidates.py), the bounded memory of read passes that alerted (recent.py), sighting alert ids
(alert.py) and which sightings alert, once, with which commits (sightings.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from plate_events import T0

from stream_worker.alerts.alert import alert_id, sighting_alert_id
from stream_worker.alerts.candidates import RankedText, match_sighting, ranked_texts
from stream_worker.alerts.recent import RecentPasses
from stream_worker.alerts.sightings import SightingAlerts, SightingRules
from stream_worker.contracts import (
    AlertOrigin,
    BestRead,
    Box,
    ClosedBy,
    Direction,
    PlateAlert,
    PlateSighting,
    SightingCandidate,
    SightingSource,
    Source,
)
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.plates.matching import Matcher
from tests.alerts.test_passes import Driver

ADDED = datetime(2025, 1, 1, tzinfo=UTC)
NOW = datetime(2025, 2, 1, tzinfo=UTC)
SEEN = datetime.fromtimestamp(T0, UTC)


def entry(plate_text: str, list_name: str = "stolen", **fields: object) -> WatchEntry:
    return WatchEntry(plate=plate_text, list=list_name, added_at=ADDED, **fields)


MATCHER = Matcher([entry("B840CK197", label="grey van"), entry("A123BC77", "residents")], 1.0)


def sighting(
    *candidates: tuple[str, float],
    text: str | None = None,
    camera: str = "gate-1",
    partition: int = 0,
    first: int = 0,
    last: int = 7,
    topic: str = "plates",
    best_text: str | None = None,
    best_confidence: float = 0.95,
    first_seen: datetime = SEEN,
) -> PlateSighting:
    voted = text if text is not None else candidates[0][0]
    return PlateSighting(
        sighting_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{camera}:{partition}:{first}")),
        camera_id=camera,
        text=voted,
        confidence=0.9,
        format_valid=True,
        candidates=[SightingCandidate(text=t, score=s) for t, s in candidates],
        reads=last - first + 1,
        first_seen=first_seen,
        last_seen=first_seen + timedelta(seconds=1.4),
        direction=None,
        best_read=BestRead(
            frame_id=f"{camera}/3",
            event_id="event-3",
            source=Source(topic="frames", partition=0, offset=3),
            captured_at=first_seen + timedelta(seconds=0.6),
            text=best_text if best_text is not None else voted,
            confidence=best_confidence,
            box=Box(x1=1, y1=2, x2=3, y2=4),
        ),
        closed_by=ClosedBy.GAP,
        closed_at=first_seen + timedelta(seconds=5),
        source=SightingSource(topic=topic, partition=partition, first_offset=first, last_offset=last),
    )


# --- candidates.py --------------------------------------------------------------------------------


def test_ranked_texts_are_the_top_candidates_best_first():
    s = sighting(("X111XX11", 0.9), ("X222XX22", 0.5), ("X333XX33", 0.2), ("X444XX44", 0.1))
    assert ranked_texts(s, 2) == [RankedText(0, "X111XX11", 0.9), RankedText(1, "X222XX22", 0.5)]
    assert [r.rank for r in ranked_texts(s, 3)] == [0, 1, 2]
    assert len(ranked_texts(s, 50)) == 4


def test_a_voted_text_below_the_top_is_added_with_its_own_rank():
    s = sighting(("X111XX1", 0.9), ("X222XX22", 0.5), ("X333XX33", 0.2), text="X333XX33")
    assert ranked_texts(s, 1) == [RankedText(0, "X111XX1", 0.9), RankedText(2, "X333XX33", 0.2)]
    assert ranked_texts(s, 3) == ranked_texts(s, 4)  # within the top: not twice


def test_a_voted_text_missing_from_its_candidates_ranks_after_them():
    s = sighting(("X111XX11", 0.9), text="X999XX99")
    assert ranked_texts(s, 3) == [RankedText(0, "X111XX11", 0.9), RankedText(1, "X999XX99", 0.9)]
    assert ranked_texts(sighting(text="X999XX99"), 3) == [RankedText(0, "X999XX99", 0.9)]


def test_top_must_be_positive():
    with pytest.raises(ValueError, match="top"):
        ranked_texts(sighting(("X111XX11", 0.9)), 0)


def test_a_second_candidate_matches_with_its_rank_and_score():
    s = sighting(("B840HH197", 0.6), ("B840OK197", 0.3))
    [found] = match_sighting(s, MATCHER, 3)
    assert (found.match.entry.plate, found.match.kind, found.match.distance) == (
        "B840CK197",
        MatchKind.FUZZY,
        0.5,
    )
    assert (found.match.candidate, found.ranked.rank, found.ranked.score) == ("B840OK197", 1, 0.3)


def test_a_candidate_beyond_the_top_does_not_count_but_the_voted_text_does():
    s = sighting(("X111XX11", 0.9), ("X222XX22", 0.5), ("B840CK197", 0.1))
    assert match_sighting(s, MATCHER, 2) == []
    [found] = match_sighting(s, MATCHER, 3)
    assert found.ranked.rank == 2 and found.match.kind is MatchKind.EXACT
    voted = sighting(("X111XX11", 0.9), ("X222XX22", 0.5), ("B840CK197", 0.1), text="B840CK197")
    [found] = match_sighting(voted, MATCHER, 1)
    assert (found.ranked.rank, found.match.candidate) == (2, "B840CK197")


def test_the_closest_candidate_wins_and_a_tie_goes_to_the_better_rank():
    s = sighting(("B840OK197", 0.6), ("B840CK197", 0.3), ("B840CK197", 0.1))
    [found] = match_sighting(s, MATCHER, 3)
    assert (found.ranked.rank, found.match.distance) == (1, 0.0)
    tie = sighting(("B840OK197", 0.6), ("B84OCK197", 0.3))  # both 0.5 from the entry
    [found] = match_sighting(tie, MATCHER, 3)
    assert found.ranked.rank == 0


def test_several_entries_each_once_and_the_same_tolerance_rules_as_reads():
    s = sighting(("B840OK197", 0.6), ("A123BC77", 0.3))
    assert [f.match.entry.plate for f in match_sighting(s, MATCHER, 3)] == ["A123BC77", "B840CK197"]
    strict = Matcher([entry("B840CK197", max_distance=0.0)], 1.0)
    assert match_sighting(sighting(("B840OK197", 0.6)), strict, 3) == []
    assert match_sighting(sighting(("B840HK197", 0.6)), Matcher([entry("B840CK197")], 0.5), 3) == []
    assert len(match_sighting(sighting(("B840HK197", 0.6)), MATCHER, 3)) == 1  # 1.0 within 1.0


def test_an_entry_expired_at_the_pass_first_read_does_not_match():
    expiring = Matcher([entry("B840CK197", expires_at=SEEN + timedelta(seconds=1))], 1.0)
    assert len(match_sighting(sighting(("B840CK197", 0.9)), expiring, 3)) == 1
    later = sighting(("B840CK197", 0.9), first_seen=SEEN + timedelta(seconds=2))
    assert match_sighting(later, expiring, 3) == []


# --- recent.py ------------------------------------------------------------------------------------


class Span:
    def __init__(self, first: int, last: int) -> None:
        self.first_offset, self.last_offset = first, last


KEY = (0, "gate-1", "B840CK197")


@pytest.mark.parametrize(
    ("first", "last", "overlaps"),
    [
        (0, 9, False),
        (0, 10, True),
        (10, 20, True),
        (20, 30, True),
        (12, 15, True),
        (5, 25, True),
        (21, 30, False),
    ],
)
def test_a_sighting_overlaps_a_remembered_pass_when_they_share_an_offset(first, last, overlaps):
    recent = RecentPasses(10, 60)
    recent.remember(KEY, Span(10, 20), 0.0)
    assert recent.overlaps(KEY, first, last, 1.0) is overlaps


def test_only_the_same_partition_camera_and_entry_count():
    recent = RecentPasses(10, 60)
    recent.remember(KEY, Span(10, 20), 0.0)
    assert recent.overlaps(KEY, 15, 15, 0.0)
    for other in ((1, "gate-1", "B840CK197"), (0, "gate-2", "B840CK197"), (0, "gate-1", "A123BC77")):
        assert not recent.overlaps(other, 15, 15, 0.0), other


def test_an_open_pass_is_seen_as_it_grows():
    recent, span = RecentPasses(10, 60), Span(10, 10)
    recent.remember(KEY, span, 0.0)
    assert not recent.overlaps(KEY, 12, 14, 0.0)
    span.last_offset = 13
    assert recent.overlaps(KEY, 12, 14, 0.0)


def test_the_memory_forgets_the_oldest_beyond_its_count():
    recent = RecentPasses(2, 60)
    for k in range(3):
        recent.remember(KEY, Span(10 * k, 10 * k + 5), float(k))
    assert len(recent) == 2
    assert not recent.overlaps(KEY, 0, 5, 3.0)
    assert recent.overlaps(KEY, 10, 15, 3.0) and recent.overlaps(KEY, 20, 25, 3.0)


def test_the_memory_forgets_a_pass_after_its_age():
    recent = RecentPasses(10, 60)
    recent.remember(KEY, Span(0, 5), 0.0)
    recent.remember((1, "gate-1", "B840CK197"), Span(0, 5), 30.0)
    assert recent.overlaps(KEY, 0, 5, 60.0)
    assert not recent.overlaps(KEY, 0, 5, 60.5)
    assert len(recent) == 1
    recent.remember(KEY, Span(0, 5), 100.0)  # remembering also forgets the old ones
    assert len(recent) == 1 and recent.overlaps(KEY, 0, 5, 100.0)


def test_the_memory_bounds_must_be_positive():
    with pytest.raises(ValueError):
        RecentPasses(0, 60)
    with pytest.raises(ValueError):
        RecentPasses(10, 0)


# --- alert.py -------------------------------------------------------------------------------------


def test_a_sighting_alert_id_is_stable_and_depends_on_each_part():
    base = ("gate-1", "B840CK197", "stolen", "s-1")
    assert sighting_alert_id(*base) == sighting_alert_id(*base)
    assert uuid.UUID(sighting_alert_id(*base)).version == 5
    ids = {
        sighting_alert_id(*base),
        sighting_alert_id("gate-2", *base[1:]),
        sighting_alert_id(base[0], "A123BC77", *base[2:]),
        sighting_alert_id(*base[:2], "residents", base[3]),
        sighting_alert_id(*base[:3], "s-2"),
    }
    assert len(ids) == 5
    assert sighting_alert_id(*base) != alert_id(*base[:3], Source(topic="sighting", partition=0, offset=0))


# --- sightings.py ---------------------------------------------------------------------------------


class Sightings:
    """The sightings engine of one sightings partition, with the read engine beside it."""

    def __init__(
        self,
        plates_topic: str = "plates",
        top: int = 3,
        recent: RecentPasses | None = None,
        reads: Driver | None = None,
    ):
        self.recent = RecentPasses(100, 900) if recent is None else recent
        self.engine = SightingAlerts(
            "sightings",
            SightingRules(plates_topic, top, 0.5, max_wait_s=30.0),
            self.recent,
            reads.engine.reads_to_come if reads is not None else lambda _p, _o: False,
            wall_clock=lambda: NOW,
            cooldowns=reads.engine.cooldowns if reads is not None else None,
        )
        self.engine.assign(0)
        self.offset = 0

    def add(self, s: PlateSighting | None, now: float = 0.0):
        self.offset += 1
        return self.engine.add(0, self.offset - 1, s, MATCHER, now)


def test_a_sighting_whose_candidate_matches_alerts_once_with_origin_sighting():
    side = Sightings()
    s = sighting(("B840HH197", 0.6), ("B840OK197", 0.3), best_text="B840HH197", first=4, last=11)
    [out] = side.add(s)
    alert = out.alert
    assert (alert.origin, alert.sighting_id, alert.candidate_rank) == (AlertOrigin.SIGHTING, s.sighting_id, 1)
    assert (alert.plate, alert.list, alert.label) == ("B840CK197", "stolen", "grey van")
    assert (alert.match_kind, alert.distance, alert.candidate, alert.confidence) == (
        MatchKind.FUZZY,
        0.5,
        "B840OK197",
        0.3,
    )
    best = s.best_read
    assert (alert.camera_id, alert.frame_id, alert.event_id) == ("gate-1", best.frame_id, best.event_id)
    assert (alert.captured_at, alert.box, alert.frame_source) == (best.captured_at, best.box, best.source)
    assert alert.source == Source(topic="plates", partition=0, offset=4)
    assert alert.alert_id == sighting_alert_id("gate-1", "B840CK197", "stolen", s.sighting_id)
    assert alert.alerted_at == NOW
    assert PlateAlert.model_validate_json(alert.to_json()) == alert
    assert side.engine.confirmed == 0


def test_a_sighting_alert_carries_the_sightings_direction_and_its_best_reads_zone():
    s = sighting(("B840OK197", 0.3), best_text="B840HH197", best_confidence=0.1)
    s = s.model_copy(
        update={
            "direction": Direction.APPROACHING,
            "best_read": s.best_read.model_copy(update={"zone": "lane-1"}),
        }
    )
    [out] = Sightings().add(s)
    assert (out.alert.zone, out.alert.direction) == ("lane-1", Direction.APPROACHING)
    assert PlateAlert.model_validate_json(out.alert.to_json()) == out.alert


def test_a_sighting_of_no_listed_plate_and_an_invalid_record_alert_nothing_and_commit():
    side = Sightings()
    assert side.add(sighting(("X999XX99", 0.9))) == []
    assert side.add(None) == []
    assert side.engine.committable() == {("sightings", 0): 2}


def test_a_sighting_is_committed_past_only_once_all_its_alerts_are_acknowledged():
    side = Sightings()
    assert side.add(sighting(("X999XX99", 0.9))) == []
    first, second = side.add(sighting(("B840HH197", 0.6), ("B840OK197", 0.3), ("A123BC77", 0.1)))
    assert side.add(sighting(("X999XX99", 0.9))) == []
    assert side.engine.committable() == {("sightings", 0): 1} and side.engine.held() == 2
    side.engine.mark_committed({("sightings", 0): 1})
    side.engine.delivered(first)
    assert side.engine.committable() == {}
    side.engine.delivered(second)
    assert side.engine.committable() == {("sightings", 0): 3} and side.engine.held() == 0


def test_a_delivery_from_an_earlier_assignment_is_ignored():
    side = Sightings()
    [out] = side.add(sighting(("B840CK197", 0.9), best_confidence=0.1))
    assert side.engine.is_current(out)
    assert side.engine.revoke(0) == 1
    side.engine.assign(0)
    assert not side.engine.is_current(out)
    side.engine.delivered(out)  # no error, nothing released in the new assignment
    side.engine.add(0, 0, None, MATCHER, 0.0)
    assert side.engine.committable() == {("sightings", 0): 1} and side.engine.held() == 0


def test_a_sighting_of_a_pass_its_reads_alerted_publishes_nothing():
    """The reads (through the read engine, as the app wires it) alerted on a pass; its sighting,
    whose best read did not match (low confidence), only confirms it."""
    reads = Driver()
    side = Sightings()
    for k in range(8):
        for outgoing in reads.feed("gate-1", T0 + 0.2 * k, "B840OK197"):
            side.recent.remember(outgoing.origin.key, outgoing.origin, 0.0)
    s = sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=7)
    assert side.add(s) == []
    assert side.engine.confirmed == 1
    assert side.engine.committable() == {("sightings", 0): 1}
    # The same sighting with offsets its pass never had: a pass the reads did not alert.
    [out] = side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=8, last=12))
    assert out.alert.origin is AlertOrigin.SIGHTING


def test_only_the_entry_the_reads_alerted_is_confirmed():
    side = Sightings()
    side.recent.remember((0, "gate-1", "A123BC77"), Span(0, 7), 0.0)
    s = sighting(("B840OK197", 0.8), ("A123BC77", 0.2), best_confidence=0.2)
    [out] = side.add(s)
    assert out.alert.plate == "B840CK197" and side.engine.confirmed == 1


def test_a_confident_matching_best_read_means_the_reads_alerted():
    """Its best read is a read of the pass: the reads side alerted on it, whichever process read
    that plates partition, so the sighting publishes nothing even with an empty memory."""
    side = Sightings()
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.5)) == []
    assert side.engine.confirmed == 1
    assert len(side.add(sighting(("B840OK197", 0.8), best_confidence=0.49))) == 1
    # The best read matches another entry than the candidate: the candidate's entry alerts.
    [out] = side.add(sighting(("A123BC77", 0.8), ("B840OK197", 0.3), best_text="A123BC77"))
    assert out.alert.plate == "B840CK197"


def test_a_sighting_of_another_plates_topic_alerts_on_its_own():
    side = Sightings(plates_topic="plates-eu")
    side.recent.remember(KEY, Span(0, 7), 0.0)
    [out] = side.add(sighting(("B840CK197", 0.9)))  # topic "plates": neither memory nor best read count
    assert out.alert.origin is AlertOrigin.SIGHTING


def test_a_forgotten_read_pass_no_longer_confirms():
    side = Sightings(recent=RecentPasses(100, 60))
    side.recent.remember(KEY, Span(0, 7), 0.0)
    s = sighting(("B840OK197", 0.8), best_confidence=0.2)
    assert side.add(s, now=60.0) == []
    assert len(side.add(s, now=61.0)) == 1  # a replayed sighting: the same alert id each time


def _feed_reads(reads: Driver, side: Sightings, count: int, text: str = "B840OK197") -> None:
    """`count` reads of one pass on plates partition 0, remembered as the app does."""
    for _ in range(count):
        for outgoing in reads.feed("gate-1", T0 + 0.2 * reads.offsets[0], text):
            side.recent.remember(outgoing.origin.key, outgoing.origin, 0.0)


def test_a_sighting_before_its_reads_waits_for_them_and_then_only_confirms_their_alert():
    """A plates backlog: the sighting of offsets 0-7 comes before those reads are consumed. It
    waits, holding its offset, and once its last read is consumed the reads' alert confirms it."""
    reads = Driver()
    side = Sightings(reads=reads)
    s = sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=7)
    assert side.add(s, now=1.0) == []
    assert (side.engine.waiting, side.engine.held()) == (1, 0)
    assert side.engine.committable() == {("sightings", 0): 0}  # the waiting sighting holds offset 0
    _feed_reads(reads, side, 7)  # offsets 0-6: the last read is still to come
    assert side.engine.ready(MATCHER, now=2.0) == [] and side.engine.waiting == 1
    _feed_reads(reads, side, 1)
    assert side.engine.ready(MATCHER, now=3.0) == []
    assert (side.engine.waiting, side.engine.confirmed, side.engine.waited_out) == (0, 1, 0)
    assert side.engine.committable() == {("sightings", 0): 1}


def test_a_waiting_sighting_whose_reads_did_not_alert_alerts_once_they_are_consumed():
    reads = Driver()
    side = Sightings(reads=reads)
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=3)) == []
    _feed_reads(reads, side, 4, text="B840HH197")  # misread: no read matched
    [out] = side.engine.ready(MATCHER, now=1.0)
    assert out.alert.origin is AlertOrigin.SIGHTING and out.closed_at == SEEN + timedelta(seconds=5)
    assert side.engine.committable() == {("sightings", 0): 0} and side.engine.held() == 1
    side.engine.delivered(out)
    assert side.engine.committable() == {("sightings", 0): 1}


def test_a_sighting_waits_at_most_max_wait_s_then_is_decided_without_its_reads():
    reads = Driver()
    side = Sightings(reads=reads)
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2), now=10.0) == []
    assert side.engine.ready(MATCHER, now=39.9) == []
    [out] = side.engine.ready(MATCHER, now=40.0)
    assert out.alert.origin is AlertOrigin.SIGHTING
    assert (side.engine.waiting, side.engine.waited_out) == (0, 1)


def test_a_sighting_in_the_cooldown_of_its_cameras_read_alert_publishes_nothing():
    """The reads alerted on offset 0 (captured at T0); the sightings service cut the pass and its
    second part (offsets 10-12, none of them the alerted read) matches by a candidate only: one
    alert for the pass. Outside the cooldown (10 s after, 3 s before) a sighting alerts."""
    reads = Driver()
    side = Sightings(reads=reads)
    _feed_reads(reads, side, 4)  # offsets 0-3, T0 to T0 + 0.6: one read alert
    _feed_reads(reads, side, 70, text="X999XX99")  # the reads of the sightings below, consumed
    late = lambda seconds, first: sighting(  # noqa: E731
        ("B840OK197", 0.8),
        best_confidence=0.2,
        first=first,
        last=first + 2,
        first_seen=SEEN + timedelta(seconds=seconds),
    )
    assert side.add(late(4.0, 10)) == [] and side.add(late(9.9, 20)) == []
    assert side.add(late(-4.4, 30)) == []  # its last read 3 s before the alert's
    assert (side.engine.cooled, side.engine.confirmed) == (3, 0)
    [out] = side.add(late(10.0, 40))
    assert out.alert.origin is AlertOrigin.SIGHTING
    # The read alert's own entry only: another entry's sighting is not cooled by it.
    [other] = side.add(sighting(("A123BC77", 0.8), best_confidence=0.2, first=50, last=52))
    assert other.alert.plate == "A123BC77"
    # Another camera is not cooled by gate-1's alert.
    [gate2] = side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, camera="gate-2", first=60, last=62))
    assert gate2.alert.camera_id == "gate-2" and side.engine.cooled == 3


def test_a_sighting_alert_starts_the_cooldown_of_its_camera_and_entry_and_a_replay_repeats_it():
    reads = Driver()
    side = Sightings(reads=reads)
    first = sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=2)
    _feed_reads(reads, side, 6, text="B840HH197")  # misreads: no read alert
    [out] = side.add(first)
    # A second part of the pass, 3 s later: cooled; so are the reads that follow within 10 s.
    second = sighting(
        ("B840OK197", 0.8), best_confidence=0.2, first=3, last=5, first_seen=SEEN + timedelta(seconds=3)
    )
    assert side.add(second) == [] and side.engine.cooled == 1
    assert reads.feed("gate-1", T0 + 8.0, "B840OK197") == []
    # The first sighting read again (a restart before its commit): the same alert again.
    [again] = side.add(first)
    assert again.alert.alert_id == out.alert.alert_id


def test_sightings_wait_only_for_reads_this_process_still_has_to_consume():
    reads = Driver(partitions=(0,))
    _feed_reads(reads, Sightings(), 8, text="B840HH197")  # misreads: no read alert, no cooldown
    side = Sightings(reads=reads)
    # Reads already consumed, another plates partition, another plates topic: decided at once.
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=7)) != []
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, partition=1)) != []
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, topic="plates-eu", last=99)) != []
    assert side.engine.waiting == 0
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=8, last=8)) == []
    assert side.engine.waiting == 1


def test_a_revoked_partition_drops_its_waiting_sightings_for_its_next_owner():
    reads = Driver()
    side = Sightings(reads=reads)
    side.add(sighting(("B840OK197", 0.8), best_confidence=0.2))
    assert side.engine.revoke(0) == 0  # no alert was unacknowledged
    assert side.engine.waiting == 0 and side.engine.ready(MATCHER, now=100.0) == []


def test_the_candidate_count_is_the_setting():
    s = sighting(("X111XX11", 0.9), ("X222XX22", 0.5), ("B840OK197", 0.2), best_text="X111XX11")
    assert Sightings(top=2).add(s) == []
    assert len(Sightings(top=3).add(s)) == 1


# --- the contract ---------------------------------------------------------------------------------


def test_an_alert_from_before_the_origin_field_parses_as_a_read_alert():
    side = Sightings()
    [out] = side.add(sighting(("B840CK197", 0.9), best_confidence=0.1))
    old = out.alert.model_dump(mode="json")
    for name in ("origin", "sighting_id", "candidate_rank"):
        del old[name]
    parsed = PlateAlert.model_validate(old)
    assert (parsed.origin, parsed.sighting_id, parsed.candidate_rank) == (AlertOrigin.READ, None, None)
