"""The pairing of entry and exit sightings into visits (visits/pairing.py): pure logic."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_records import T0, plate_sighting

from stream_worker.contracts import PlateVisit, VisitEnd
from stream_worker.contracts.cameras import SiteRole
from stream_worker.visits.pairing import SiteCamera, Visits

IN = SiteCamera("depot", SiteRole.ENTRY)
OUT = SiteCamera("depot", SiteRole.EXIT)
IN_LIMITED = SiteCamera("depot", SiteRole.ENTRY, overstay_s=600)
OTHER_OUT = SiteCamera("yard", SiteRole.EXIT)


def at(seconds: float, name: str, text: str = "B840CK197", camera_id: str = "gate-in"):
    """A sighting first seen `seconds` after T0 (plate_sighting's first_seen is last_seen - 3 s)."""
    return plate_sighting(name, text, last_seen=T0 + timedelta(seconds=seconds + 3), camera_id=camera_id)


def kinds(events: list[PlateVisit]) -> list[str]:
    return [event.event.value for event in events]


def test_an_entry_then_an_exit_of_the_plate_is_one_visit_with_its_dwell():
    visits = Visits()
    opened = visits.add(at(0, "in"), IN)
    closed = visits.add(at(125.5, "out", camera_id="gate-out"), OUT)
    assert kinds(opened) == ["opened"] and kinds(closed) == ["closed"]
    assert closed[0].visit_id == opened[0].visit_id
    assert closed[0].dwell_s == 125.5
    assert closed[0].ended_by is VisitEnd.EXIT
    assert closed[0].exit_camera_id == "gate-out" and closed[0].exited_at == T0 + timedelta(seconds=125.5)
    assert opened[0].entered_at == T0 and opened[0].dwell_s == 0
    assert len(visits) == 0


def test_an_exit_misread_within_the_distance_closes_the_visit_and_a_different_plate_does_not():
    visits = Visits(max_distance=1.0)
    visits.add(at(0, "in"), IN)
    assert visits.add(at(10, "other", text="B840HK777"), OUT) == []
    assert visits.unmatched_exits == 1
    closed = visits.add(at(20, "out", text="B840OK197"), OUT)  # O for C: 0.5
    assert kinds(closed) == ["closed"] and closed[0].exit_text == "B840OK197"
    assert closed[0].plate == "B840CK197"


def test_an_exact_distance_of_zero_refuses_a_misread():
    visits = Visits(max_distance=0.0)
    visits.add(at(0, "in"), IN)
    assert visits.add(at(20, "out", text="B840OK197"), OUT) == []


def test_an_exit_pairs_with_the_nearest_plate():
    visits = Visits(max_distance=1.0)
    far = visits.add(at(0, "far", text="B840HK197"), IN)[0]  # 1.0 from the exit's text
    near = visits.add(at(5, "near", text="B84OCK197"), IN)[0]  # 0.5 (O for 0), 1.5 from `far`
    closed = visits.add(at(30, "out", text="B840CK197"), OUT)
    assert closed[0].visit_id == near.visit_id
    assert [v.visit_id for v in visits.open_visits()] == [far.visit_id]


def test_an_exit_as_near_to_two_plates_pairs_with_the_latest_entry():
    visits = Visits(max_distance=0.5)
    early = visits.add(at(0, "early", text="B840OK197"), IN)[0]  # each 0.5 from the exit's text
    late = visits.add(at(5, "late", text="B84OCK197"), IN)[0]
    closed = visits.add(at(30, "out", text="B840CK197"), OUT)
    assert closed[0].visit_id == late.visit_id
    assert [v.visit_id for v in visits.open_visits()] == [early.visit_id]


def test_a_reentry_is_found_fuzzily_as_an_exit_is():
    visits = Visits(max_distance=1.0)
    visits.add(at(0, "in-1", text="B840CK197"), IN)
    assert kinds(visits.add(at(60, "in-2", text="B840OK197"), IN)) == ["closed", "opened"]


def test_an_exit_only_closes_a_visit_of_its_own_site_entered_before_it():
    visits = Visits()
    visits.add(at(100, "in"), IN)
    assert visits.add(at(50, "out-before"), OUT) == []  # seen before the entry
    assert visits.add(at(150, "out-elsewhere"), OTHER_OUT) == []
    assert visits.unmatched_exits == 2
    assert len(visits) == 1


def test_a_camera_of_no_site_decides_nothing():
    visits = Visits()
    assert visits.add(at(0, "in"), None) == []
    assert len(visits) == 0 and visits.unmatched_exits == 0


def test_a_reentry_without_exit_closes_the_old_visit_as_no_exit_seen_then_opens_a_new_one():
    visits = Visits()
    first = visits.add(at(0, "in-1"), IN)[0]
    events = visits.add(at(300, "in-2"), IN)
    assert kinds(events) == ["closed", "opened"]
    closed, opened = events
    assert closed.visit_id == first.visit_id and closed.ended_by is VisitEnd.REENTRY
    assert closed.dwell_s == 300 and closed.exit_camera_id is None and closed.exited_at is None
    assert opened.visit_id != first.visit_id
    assert [v.visit_id for v in visits.open_visits()] == [opened.visit_id]


def test_an_entry_older_than_the_plates_open_visit_is_passed_over():
    visits = Visits()
    visits.add(at(300, "in-late"), IN)
    assert visits.add(at(0, "in-early"), IN) == []
    assert visits.late_entries == 1 and len(visits) == 1


def test_overstay_is_raised_once_when_the_limit_passes():
    visits = Visits()
    opened = visits.add(at(0, "in"), IN_LIMITED)[0]
    assert opened.overstay_s == 600
    assert visits.overstays(T0 + timedelta(seconds=600)) == []  # not past it yet
    events = visits.overstays(T0 + timedelta(seconds=601))
    assert kinds(events) == ["overstay"]
    assert events[0].at == T0 + timedelta(seconds=600) and events[0].dwell_s == 600
    assert events[0].event_id != opened.event_id and events[0].visit_id == opened.visit_id
    assert visits.overstays(T0 + timedelta(seconds=5000)) == []
    closed = visits.add(at(4000, "out"), OUT)
    assert kinds(closed) == ["closed"] and closed[0].dwell_s == 4000


def test_a_visit_closed_past_its_limit_raises_its_overstay_first_and_once():
    visits = Visits()
    visits.add(at(0, "in"), IN_LIMITED)
    assert kinds(visits.add(at(900, "out"), OUT)) == ["overstay", "closed"]
    assert visits.overstays(T0 + timedelta(days=1)) == []


def test_a_visit_closed_within_its_limit_raises_no_overstay():
    visits = Visits()
    visits.add(at(0, "in"), IN_LIMITED)
    assert kinds(visits.add(at(599, "out"), OUT)) == ["closed"]
    assert visits.overstays(T0 + timedelta(days=1)) == []


def test_the_default_limit_applies_to_entry_cameras_without_their_own_and_none_means_none():
    limited = Visits(default_overstay_s=60)
    limited.add(at(0, "in"), IN)
    assert kinds(limited.overstays(T0 + timedelta(seconds=61))) == ["overstay"]
    unlimited = Visits()
    unlimited.add(at(0, "in"), IN)
    assert unlimited.overstays(T0 + timedelta(days=365)) == []


def test_overstays_come_in_the_order_of_their_time():
    visits = Visits(default_overstay_s=60)
    visits.add(at(10, "b", text="A111AA11"), IN)
    visits.add(at(0, "a", text="C222CC22"), IN)
    events = visits.overstays(T0 + timedelta(hours=1))
    assert [event.plate for event in events] == ["C222CC22", "A111AA11"]


def test_a_sighting_decided_again_decides_nothing():
    visits = Visits(default_overstay_s=60)
    entry, exit_ = at(0, "in"), at(30, "out")
    visits.add(entry, IN)
    assert visits.add(entry, IN) == []
    visits.add(exit_, OUT)
    assert visits.add(exit_, OUT) == [] and visits.add(entry, IN) == []
    assert visits.unmatched_exits == 0


def replay(events: list[PlateVisit], **settings: object) -> Visits:
    """A new state rebuilt from published events, as the service does at its start."""
    visits = Visits(**settings)  # type: ignore[arg-type]
    for event in events:
        visits.apply(PlateVisit.model_validate_json(event.to_json()))
    return visits


def test_a_state_rebuilt_from_its_events_keeps_open_visits_and_decides_the_same_events():
    first = Visits()
    published = first.add(at(0, "in-a", text="A111AA11"), IN_LIMITED)
    published += first.add(at(5, "in-b", text="C222CC22"), IN_LIMITED)
    published += first.add(at(60, "out-a", text="A111AA11"), OUT)
    rebuilt = replay(published)
    assert [v.plate for v in rebuilt.open_visits()] == ["C222CC22"]
    # The sightings after the last commit come again: the decided ones decide nothing.
    for sighting, camera in (
        (at(0, "in-a", text="A111AA11"), IN_LIMITED),
        (at(60, "out-a", text="A111AA11"), OUT),
    ):
        assert rebuilt.add(sighting, camera) == []
    later = at(1000, "out-b", text="C222CC22")
    assert rebuilt.add(later, OUT) == first.add(later, OUT)
    assert kinds(rebuilt.overstays(T0 + timedelta(days=1))) == []


def test_an_overstay_read_back_is_not_raised_again():
    first = Visits()
    published = first.add(at(0, "in"), IN_LIMITED) + first.overstays(T0 + timedelta(seconds=700))
    rebuilt = replay(published)
    assert rebuilt.overstays(T0 + timedelta(days=1)) == []
    assert kinds(rebuilt.add(at(800, "out"), OUT)) == ["closed"]


def test_a_reentry_closed_but_not_opened_before_a_crash_opens_its_visit_on_replay():
    first = Visits()
    published = first.add(at(0, "in-1"), IN)
    closed, opened = first.add(at(300, "in-2"), IN)
    rebuilt = replay([*published, closed])  # the crash came before `opened` was published
    assert rebuilt.add(at(300, "in-2"), IN) == [opened]


@pytest.mark.parametrize("duplicated", ["opened", "closed"])
def test_events_read_back_twice_or_an_opened_after_its_closed_do_not_reopen_a_visit(duplicated):
    first = Visits()
    opened = first.add(at(0, "in"), IN)
    closed = first.add(at(10, "out"), OUT)
    events = [*opened, *closed, *(opened if duplicated == "opened" else closed)]
    assert len(replay(events)) == 0


def test_ids_depend_on_the_site_and_the_entry_sighting_only():
    a, b = Visits(), Visits()
    one = a.add(at(0, "in"), IN)[0]
    same = b.add(at(0, "in"), SiteCamera("depot", SiteRole.ENTRY, overstay_s=5))[0]
    other_site = Visits().add(at(0, "in"), SiteCamera("yard", SiteRole.ENTRY))[0]
    assert one.visit_id == same.visit_id and one.event_id == same.event_id
    assert other_site.visit_id != one.visit_id


def test_the_memory_of_decided_sightings_is_bounded():
    visits = Visits(remembered=2)
    for index in range(3):
        visits.add(at(index, f"in-{index}", text=f"A{index}{index}{index}AA11"), IN)
        visits.add(at(index + 50, f"out-{index}", text=f"A{index}{index}{index}AA11"), OUT)
    assert len(visits._decided.items) == 2 and len(visits._closed.items) == 2


def test_a_held_exit_is_handed_back_undecided_and_closes_the_visit_of_an_entry_read_later():
    visits = Visits()
    exit_ = at(60, "out")
    assert visits.add(exit_, OUT, hold_exit=True) is None
    assert visits.unmatched_exits == 0
    visits.add(at(0, "in"), IN)
    assert kinds(visits.add(exit_, OUT, hold_exit=True)) == ["closed"]


def test_a_held_exit_given_up_on_is_counted_unmatched():
    visits = Visits()
    assert visits.add(at(60, "out"), OUT, hold_exit=True) is None
    assert visits.add(at(60, "out"), OUT) == []
    assert visits.unmatched_exits == 1
