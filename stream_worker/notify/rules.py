"""Which events a target gets (its `NotifyRules`): pure logic, no I/O, so every case is a unit test.

`Facts` is what a rule looks at, taken from the alert, the sighting or the visit's overstay (a zone,
a direction or a site only where the event carries one: a rule asking for them passes no event
without; an alert has its read's zone, and a direction only when raised on a sighting; only an
overstay has a site).
`Cooldown` remembers, per target, kind and plate, the event time of the last delivery decided, so one
vehicle standing at a gate is one message; the same event decided again (a replay) is never held
back by itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import lru_cache
from zoneinfo import ZoneInfo

from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.notify import WEEKDAYS, ActiveHours, NotifyRules, OverstayMatch, VehicleMatch
from stream_worker.contracts.sightings import Direction, PlateSighting
from stream_worker.contracts.visits import PlateVisit

MAX_REMEMBERED = 100_000  # (target, plate) pairs the cooldown remembers, the oldest forgotten first


@dataclass(frozen=True, slots=True)
class Facts:
    event_id: str
    plate: str
    list: str | None
    camera_id: str
    confidence: float
    at: datetime  # aware
    zone: str | None = None
    direction: Direction | None = None
    site: str | None = None


def alert_facts(alert: PlateAlert) -> Facts:
    """An alert's facts: its read's zone, and its direction when it was raised on a sighting."""
    return Facts(
        event_id=alert.alert_id,
        plate=alert.plate,
        list=alert.list,
        camera_id=alert.camera_id,
        confidence=alert.confidence,
        at=_aware(alert.captured_at or alert.alerted_at),
        zone=alert.zone,
        direction=alert.direction,
    )


def sighting_facts(sighting: PlateSighting) -> Facts:
    return Facts(
        event_id=sighting.sighting_id,
        plate=sighting.text,
        list=None,
        camera_id=sighting.camera_id,
        confidence=sighting.confidence,
        at=_aware(sighting.first_seen),
        zone=sighting.best_read.zone,
        direction=sighting.direction,
    )


def overstay_facts(visit: PlateVisit) -> Facts:
    """An overstay's facts: its entry camera, its site, the list that set its limit, its time (the
    entry's capture time + the limit). Not a read: it is as confident as can be."""
    return Facts(
        event_id=visit.event_id,
        plate=visit.plate,
        list=visit.list,
        camera_id=visit.entry_camera_id,
        confidence=1.0,
        at=_aware(visit.at),
        site=visit.site,
    )


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # the contracts' times are UTC


class EventKind(StrEnum):
    """What a delivery is about: an alert (the alerts topic), a sighting whose plate is on none
    (unknown) or one (allowed) of the target's allow lists (the sightings topic), or a visit past
    its limit (the visits topic)."""

    ALERT = "alert"
    UNKNOWN_VEHICLE = "unknown_vehicle"
    ALLOWED_VEHICLE = "allowed_vehicle"
    OVERSTAY = "overstay"


class Source(StrEnum):
    ALERTS = "alerts"
    SIGHTINGS = "sightings"
    VISITS = "visits"


SOURCE_OF = {
    EventKind.ALERT: Source.ALERTS,
    EventKind.UNKNOWN_VEHICLE: Source.SIGHTINGS,
    EventKind.ALLOWED_VEHICLE: Source.SIGHTINGS,
    EventKind.OVERSTAY: Source.VISITS,
}


def source_of(kind: EventKind) -> Source:
    return SOURCE_OF[kind]


def event_for(
    rules: NotifyRules, source: Source, facts: Facts, allowed_lists: Iterable[str] = ()
) -> EventKind | None:
    """What a target with `rules` gets from an event of `source` (the cooldown aside), or None. An
    alert goes to targets without allow lists; a sighting to those with, as an unknown vehicle
    when its plate is on none of them, or (`vehicles: allowed`) as an allowed vehicle when it is on
    one (`allowed_lists`: the allow lists its plate matched); an overstay to those asking for
    overstays (`overstays: also` or `only`, the latter getting nothing else)."""
    if source is Source.VISITS:
        wanted = rules.overstays is not OverstayMatch.NONE
        return EventKind.OVERSTAY if wanted and passes(rules, facts) else None
    if rules.overstays is OverstayMatch.ONLY:
        return None
    if source is Source.ALERTS:
        return EventKind.ALERT if not rules.allow_lists and passes(rules, facts) else None
    if not rules.allow_lists or not passes(rules, facts):
        return None
    known = bool(set(rules.allow_lists) & set(allowed_lists))
    if rules.vehicles is VehicleMatch.ALLOWED:
        return EventKind.ALLOWED_VEHICLE if known else None
    return None if known else EventKind.UNKNOWN_VEHICLE


def passes(rules: NotifyRules, facts: Facts) -> bool:
    """Whether the alert passes every rule but the cooldown (which has memory: `Cooldown`)."""
    if rules.lists and facts.list not in rules.lists:
        return False
    if rules.cameras and facts.camera_id not in rules.cameras:
        return False
    if rules.sites and facts.site not in rules.sites:
        return False
    if rules.zones and facts.zone not in rules.zones:
        return False
    if rules.directions and facts.direction not in rules.directions:
        return False
    if facts.confidence < rules.min_confidence:
        return False
    return active(rules, facts.at)


def active(rules: NotifyRules, at: datetime) -> bool:
    """Whether `at` falls in one of the active hours (always, without any)."""
    if not rules.active_hours:
        return True
    local = at.astimezone(_zone(rules.timezone))
    return any(_within(window, local) for window in rules.active_hours)


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def _within(window: ActiveHours, local: datetime) -> bool:
    now = local.time().replace(tzinfo=None)
    today = WEEKDAYS[local.weekday()]
    yesterday = WEEKDAYS[(local.weekday() - 1) % 7]

    def starts_on(day: object) -> bool:
        return not window.days or day in window.days

    if window.start < window.end:
        return starts_on(today) and window.start <= now < window.end
    # past midnight: the evening part belongs to today, the morning part to yesterday's window
    return (starts_on(today) and now >= window.start) or (starts_on(yesterday) and now < window.end)


class Cooldown:
    def __init__(self, max_remembered: int = MAX_REMEMBERED) -> None:
        self._last: OrderedDict[tuple[str, str, str], tuple[datetime, str]] = OrderedDict()
        self._max = max_remembered

    def admit(self, target: str, cooldown_s: float, facts: Facts, kind: EventKind = EventKind.ALERT) -> bool:
        """Whether the event goes to `target`: no other event of its plate and kind (an overstay and
        an alert are counted apart) was admitted there within `cooldown_s` before it (event time);
        admitted, it starts a new cooldown."""
        key = (target, kind.value, facts.plate)
        last = self._last.get(key)
        if cooldown_s > 0 and last is not None:
            at, event_id = last
            if event_id != facts.event_id and timedelta(0) <= facts.at - at < timedelta(seconds=cooldown_s):
                return False
        if last is None or facts.at >= last[0]:  # an older alert (out of order) starts none
            self._last[key] = (facts.at, facts.event_id)
            self._last.move_to_end(key)
        while len(self._last) > self._max:
            self._last.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._last)
