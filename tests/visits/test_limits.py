"""A visit's overstay limit (visits/limits.py with pairing.py): the plate's own, its list's, its
site's, the default, the most specific first; fuzzy as the watch lists match; kept across a
restart by the `opened` event. Pure logic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from store_records import T0, plate_sighting

from stream_worker.contracts import PlateVisit
from stream_worker.contracts.cameras import SiteRole
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.visits.limits import Limit, Limits
from stream_worker.visits.pairing import SiteCamera, Visits

SITE_LIMITED = SiteCamera("depot", SiteRole.ENTRY, overstay_s=3600)
OUT = SiteCamera("depot", SiteRole.EXIT)
ADDED = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: float, name: str, text: str, camera_id: str = "gate-in"):
    return plate_sighting(name, text, last_seen=T0 + timedelta(seconds=seconds + 3), camera_id=camera_id)


def entry(plate: str, list_name: str, **fields: object) -> WatchEntry:
    return WatchEntry.model_validate({"plate": plate, "list": list_name, "added_at": ADDED, **fields})


def limits(*entries: WatchEntry, lists: dict[str, float] | None = None) -> Limits:
    found = Limits(lists or {}, max_distance=1.0)
    found.follow({one.plate: one for one in entries})
    return found


def test_the_plates_own_limit_then_its_lists_then_none():
    found = limits(
        entry("B840CK197", "deliveries", overstay_s=120),
        entry("A111AA11", "deliveries"),
        entry("C222CC22", "stolen"),
        lists={"deliveries": 1800},
    )
    assert found.of(at(0, "b", "B840CK197")) == Limit(120, "deliveries")
    assert found.of(at(0, "a", "A111AA11")) == Limit(1800, "deliveries")
    assert found.of(at(0, "c", "C222CC22")) is None  # its list sets no limit: the site's
    assert found.of(at(0, "x", "X999XX99")) is None
    assert len(found) == 2


def test_zero_means_never_and_allow_entries_count_too():
    found = limits(
        entry("B840CK197", "residents", kind=WatchKind.ALLOW),
        entry("A111AA11", "staff", overstay_s=0),
        lists={"residents": 0},
    )
    assert found.of(at(0, "b", "B840CK197")) == Limit(None, "residents")
    assert found.of(at(0, "a", "A111AA11")) == Limit(None, "staff")


def test_a_misread_finds_the_plate_and_an_expired_entry_does_not():
    found = limits(
        entry("B840CK197", "deliveries", overstay_s=120),
        entry("A111AA11", "deliveries", overstay_s=60, expires_at=T0 - timedelta(days=1)),
    )
    assert found.of(at(0, "b", "B840OK197")) == Limit(120, "deliveries")  # O for C: 0.5
    assert found.of(at(0, "a", "A111AA11")) is None


def test_a_visit_takes_the_most_specific_limit_and_keeps_it_across_a_restart():
    found = limits(
        entry("B840CK197", "deliveries", overstay_s=120), entry("A111AA11", "residents", overstay_s=0)
    )
    visits = Visits(default_overstay_s=60, limit_of=found.of)
    [listed] = visits.add(at(0, "b", "B840CK197"), SITE_LIMITED)
    [never] = visits.add(at(0, "a", "A111AA11"), SITE_LIMITED)
    [site] = visits.add(at(0, "c", "C222CC22"), SITE_LIMITED)
    assert (listed.overstay_s, listed.list) == (120, "deliveries")
    assert (never.overstay_s, never.list) == (None, "residents")
    assert (site.overstay_s, site.list) == (3600, None)
    [late] = visits.overstays(T0 + timedelta(seconds=121))
    assert (late.plate, late.overstay_s, late.list) == ("B840CK197", 120, "deliveries")

    # Rebuilt from its events with the watch list gone: the limits stay those the visits opened with.
    rebuilt = Visits(default_overstay_s=60, limit_of=limits().of)
    for event in (listed, never, site):
        rebuilt.apply(PlateVisit.model_validate_json(event.to_json()))
    [again] = rebuilt.overstays(T0 + timedelta(seconds=121))
    assert again == late
    assert [event.plate for event in rebuilt.overstays(T0 + timedelta(days=300))] == ["C222CC22"]
