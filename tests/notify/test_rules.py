"""The rules of a target (notify/rules.py): each rule alone, their combination, active hours across
midnight and time zones (DST included), and the cooldown per plate and target."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from store_records import plate_alert, plate_sighting

from stream_worker.contracts.notify import ActiveHours, NotifyRules, OverstayMatch
from stream_worker.contracts.sightings import Direction
from stream_worker.contracts.visits import PlateVisit, VisitEventKind
from stream_worker.notify.rules import (
    Cooldown,
    EventKind,
    Facts,
    Source,
    active,
    alert_facts,
    event_for,
    overstay_facts,
    passes,
    sighting_facts,
    source_of,
)

# A Wednesday.
NOON = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def facts(**changes: object) -> Facts:
    base = {
        "event_id": "e-1",
        "plate": "B840CK197",
        "list": "stolen",
        "camera_id": "gate-1",
        "confidence": 0.9,
        "at": NOON,
    }
    return Facts(**{**base, **changes})  # type: ignore[arg-type]


def test_no_rules_pass_everything() -> None:
    assert passes(NotifyRules(), facts())
    assert passes(NotifyRules(), facts(list=None, confidence=0.0))


@pytest.mark.parametrize(
    ("rules", "passing", "failing"),
    [
        ({"lists": ["stolen", "vip"]}, {"list": "vip"}, {"list": "residents"}),
        ({"cameras": ["gate-1"]}, {"camera_id": "gate-1"}, {"camera_id": "gate-2"}),
        ({"zones": ["lane-1"]}, {"zone": "lane-1"}, {"zone": "lane-2"}),
        ({"directions": ["approaching"]}, {"direction": Direction.APPROACHING}, {"direction": "left"}),
        ({"min_confidence": 0.8}, {"confidence": 0.8}, {"confidence": 0.79}),
    ],
)
def test_each_rule_alone(rules: dict, passing: dict, failing: dict) -> None:
    parsed = NotifyRules.model_validate(rules)
    assert passes(parsed, facts(**passing))
    assert not passes(parsed, facts(**failing))


@pytest.mark.parametrize("missing", [{"zones": ["lane-1"]}, {"directions": ["left"]}, {"lists": ["stolen"]}])
def test_a_rule_asking_for_a_value_the_event_lacks_passes_nothing(missing: dict) -> None:
    assert not passes(NotifyRules.model_validate(missing), facts(list=None))


def test_every_rule_must_pass() -> None:
    rules = NotifyRules(lists=("stolen",), cameras=("gate-1",), min_confidence=0.5)
    assert passes(rules, facts())
    assert not passes(rules, facts(camera_id="gate-2"))
    assert not passes(rules, facts(list="vip"))
    assert not passes(rules, facts(confidence=0.1))


def window(start: str, end: str, *days: str) -> ActiveHours:
    return ActiveHours.model_validate({"start": start, "end": end, "days": list(days)})


def test_active_hours_in_the_rules_time_zone() -> None:
    # 09:00-17:00 in Berlin (UTC+1 in early March): 12:00 UTC is 13:00 there; 16:30 UTC is 17:30.
    rules = NotifyRules(timezone="Europe/Berlin", active_hours=(window("09:00", "17:00"),))
    assert active(rules, NOON)
    assert not active(rules, NOON.replace(hour=16, minute=30))
    assert active(rules, NOON.replace(hour=8, minute=0))  # 09:00 Berlin: the start is inclusive
    assert not active(rules, NOON.replace(hour=16, minute=0))  # 17:00 Berlin: the end is exclusive


def test_active_hours_follow_daylight_saving() -> None:
    rules = NotifyRules(timezone="Europe/Berlin", active_hours=(window("09:00", "17:00"),))
    summer_8_utc = datetime(2026, 7, 1, 7, 30, tzinfo=UTC)  # 09:30 in Berlin (UTC+2)
    winter_8_utc = datetime(2026, 1, 7, 7, 30, tzinfo=UTC)  # 08:30 in Berlin (UTC+1)
    assert active(rules, summer_8_utc)
    assert not active(rules, winter_8_utc)


def test_a_window_past_midnight_belongs_to_the_day_it_starts() -> None:
    # Friday 22:00 to Saturday 06:00 (UTC).
    rules = NotifyRules(active_hours=(window("22:00", "06:00", "fri"),))
    friday = datetime(2026, 3, 6, tzinfo=UTC)
    assert friday.weekday() == 4
    assert active(rules, friday.replace(hour=23))
    assert active(rules, friday + timedelta(days=1, hours=5, minutes=59))  # Saturday 05:59
    assert not active(rules, friday + timedelta(days=1, hours=6))  # Saturday 06:00
    assert not active(rules, friday.replace(hour=3))  # Friday early: Thursday's night, not listed
    assert not active(rules, friday + timedelta(days=1, hours=23))  # Saturday night: not listed


def test_days_and_several_windows() -> None:
    rules = NotifyRules(active_hours=(window("08:00", "10:00", "mon", "tue"), window("20:00", "21:00")))
    monday_9 = datetime(2026, 3, 2, 9, tzinfo=UTC)
    assert active(rules, monday_9)
    assert not active(rules, monday_9 + timedelta(days=2))  # Wednesday 09:00
    assert active(rules, monday_9 + timedelta(days=2, hours=11))  # Wednesday 20:00: every day
    assert not passes(rules, facts(at=monday_9 + timedelta(days=2)))


def test_cooldown_per_plate_and_target() -> None:
    cooldown = Cooldown()
    first = facts(event_id="a")
    assert cooldown.admit("gate", 60, first)
    assert not cooldown.admit("gate", 60, facts(event_id="b", at=NOON + timedelta(seconds=59)))
    assert cooldown.admit("chat", 60, facts(event_id="b", at=NOON + timedelta(seconds=59)))  # another target
    assert cooldown.admit("gate", 60, facts(event_id="c", plate="A123BC77"))  # another plate
    assert cooldown.admit("gate", 60, facts(event_id="d", at=NOON + timedelta(seconds=60)))  # it has passed


def test_cooldown_never_holds_back_the_same_event_nor_without_a_cooldown() -> None:
    cooldown = Cooldown()
    assert cooldown.admit("gate", 60, facts(event_id="a"))
    assert cooldown.admit("gate", 60, facts(event_id="a"))  # a replay of the same alert
    assert cooldown.admit("gate", 0, facts(event_id="b"))


def test_cooldown_an_older_alert_starts_none_and_memory_is_bounded() -> None:
    cooldown = Cooldown(max_remembered=2)
    assert cooldown.admit("gate", 60, facts(event_id="a"))
    assert cooldown.admit("gate", 60, facts(event_id="old", at=NOON - timedelta(seconds=120)))
    assert not cooldown.admit("gate", 60, facts(event_id="b", at=NOON + timedelta(seconds=30)))
    assert cooldown.admit("gate", 60, facts(event_id="x", plate="X1"))
    assert cooldown.admit("gate", 60, facts(event_id="y", plate="Y1"))
    assert len(cooldown) == 2  # the first plate forgotten: it is admitted again
    assert cooldown.admit("gate", 60, facts(event_id="c", at=NOON + timedelta(seconds=31)))


def test_alerts_go_to_targets_without_allow_lists_sightings_to_those_with() -> None:
    alerts_only = NotifyRules(lists=("stolen",))
    unknown = NotifyRules(allow_lists=("residents", "staff"), cameras=("gate-1",))
    sighting = facts(list=None)
    assert event_for(alerts_only, Source.ALERTS, facts()) is EventKind.ALERT
    assert event_for(alerts_only, Source.SIGHTINGS, sighting) is None
    assert event_for(unknown, Source.ALERTS, facts()) is None
    assert event_for(unknown, Source.SIGHTINGS, sighting) is EventKind.UNKNOWN_VEHICLE
    assert event_for(unknown, Source.SIGHTINGS, sighting, {"visitors"}) is EventKind.UNKNOWN_VEHICLE
    assert event_for(unknown, Source.SIGHTINGS, sighting, {"staff"}) is None
    assert event_for(unknown, Source.SIGHTINGS, facts(list=None, camera_id="yard")) is None


def test_a_gate_opener_gets_the_allowed_plates_arriving() -> None:
    gate = NotifyRules(allow_lists=("residents",), vehicles="allowed", directions=("approaching",))
    arriving = facts(list=None, direction=Direction.APPROACHING)
    assert event_for(gate, Source.SIGHTINGS, arriving, {"residents"}) is EventKind.ALLOWED_VEHICLE
    assert event_for(gate, Source.SIGHTINGS, arriving, {"visitors"}) is None  # not on its lists
    assert (
        event_for(gate, Source.SIGHTINGS, facts(list=None, direction=Direction.RECEDING), {"residents"})
        is None
    )
    with pytest.raises(ValueError, match="needs allow_lists"):
        NotifyRules(vehicles="allowed")


def test_lists_and_allow_lists_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        NotifyRules(lists=("stolen",), allow_lists=("residents",))


def test_an_alerts_zone_and_direction_reach_the_rules() -> None:
    """Alerts carry the read's zone (and a sighting alert its direction), so a target
    asking for a zone or a direction gets them; a read alert without a zone still passes none."""
    zoned = plate_alert("zoned", "B840CK197").model_copy(update={"zone": "lane-1"})
    arriving = zoned.model_copy(update={"direction": Direction.APPROACHING})
    lane = NotifyRules(zones=("lane-1",))
    gate = NotifyRules(zones=("lane-1",), directions=(Direction.APPROACHING,))
    assert event_for(lane, Source.ALERTS, alert_facts(zoned)) is EventKind.ALERT
    assert event_for(gate, Source.ALERTS, alert_facts(zoned)) is None  # a read alert: no direction yet
    assert event_for(gate, Source.ALERTS, alert_facts(arriving)) is EventKind.ALERT
    assert event_for(lane, Source.ALERTS, alert_facts(plate_alert("plain", "B840CK197"))) is None
    sighting = plate_sighting("s", "X999YX99", zone="lane-1", direction="approaching")
    assert passes(gate, sighting_facts(sighting))


def overstay(**changes: object) -> PlateVisit:
    base = {
        "event_id": "9d3c3f3e-0000-5000-8000-000000000001",
        "event": VisitEventKind.OVERSTAY,
        "visit_id": "9d3c3f3e-0000-5000-8000-000000000002",
        "site": "depot",
        "plate": "B840CK197",
        "entry_camera_id": "gate-in",
        "entry_sighting_id": "9d3c3f3e-0000-5000-8000-000000000003",
        "entered_at": NOON - timedelta(seconds=600),
        "at": NOON,
        "dwell_s": 600,
        "overstay_s": 600,
    }
    return PlateVisit.model_validate({**base, **changes})


def test_an_overstays_facts_are_its_entry_camera_site_list_and_time() -> None:
    got = overstay_facts(overstay(list="deliveries"))
    assert (got.event_id, got.plate, got.camera_id, got.site, got.list, got.at) == (
        "9d3c3f3e-0000-5000-8000-000000000001",
        "B840CK197",
        "gate-in",
        "depot",
        "deliveries",
        NOON,
    )
    assert (got.zone, got.direction, got.confidence) == (None, None, 1.0)
    assert overstay_facts(overstay()).list is None


def test_overstays_go_only_to_targets_asking_for_them_and_only_takes_nothing_else() -> None:
    visit, alert = overstay_facts(overstay()), facts()
    plain = NotifyRules()
    also = NotifyRules(overstays=OverstayMatch.ALSO)
    only = NotifyRules(overstays=OverstayMatch.ONLY)
    assert event_for(plain, Source.VISITS, visit) is None
    assert event_for(also, Source.VISITS, visit) is EventKind.OVERSTAY
    assert event_for(only, Source.VISITS, visit) is EventKind.OVERSTAY
    assert event_for(also, Source.ALERTS, alert) is EventKind.ALERT
    assert event_for(only, Source.ALERTS, alert) is None
    vehicles = NotifyRules(allow_lists=("residents",), overstays=OverstayMatch.ALSO)
    assert event_for(vehicles, Source.SIGHTINGS, facts(list=None)) is EventKind.UNKNOWN_VEHICLE
    assert event_for(vehicles, Source.VISITS, visit) is EventKind.OVERSTAY
    with pytest.raises(ValueError, match="overstays: only"):
        NotifyRules(allow_lists=("residents",), overstays=OverstayMatch.ONLY)
    assert source_of(EventKind.OVERSTAY) is Source.VISITS


def test_an_overstay_passes_the_rules_of_its_site_camera_list_and_hours() -> None:
    def gets(rules: dict, visit: PlateVisit) -> bool:
        parsed = NotifyRules.model_validate({"overstays": "only", **rules})
        return event_for(parsed, Source.VISITS, overstay_facts(visit)) is EventKind.OVERSTAY

    assert gets({"sites": ["depot"]}, overstay()) and not gets({"sites": ["yard"]}, overstay())
    assert gets({"cameras": ["gate-in"]}, overstay()) and not gets({"cameras": ["gate-2"]}, overstay())
    assert gets({"lists": ["vip"]}, overstay(list="vip")) and not gets({"lists": ["vip"]}, overstay())
    assert gets({"min_confidence": 1.0}, overstay())  # not a read
    assert not gets({"zones": ["lane-1"]}, overstay())  # it has no zone
    night = {"active_hours": [{"start": "20:00", "end": "06:00"}]}
    assert not gets(night, overstay()) and gets(night, overstay(at=NOON + timedelta(hours=10)))
    # Only overstays have a site: a target asking for sites gets no alert.
    assert event_for(NotifyRules(sites=("depot",)), Source.ALERTS, facts()) is None


def test_the_cooldown_counts_an_overstay_apart_from_the_plates_alerts() -> None:
    cooldown = Cooldown()
    assert cooldown.admit("gate", 600, facts(event_id="a"), EventKind.ALERT)
    assert cooldown.admit("gate", 600, facts(event_id="o"), EventKind.OVERSTAY)
    assert not cooldown.admit(
        "gate", 600, facts(event_id="b", at=NOON + timedelta(seconds=1)), EventKind.ALERT
    )
