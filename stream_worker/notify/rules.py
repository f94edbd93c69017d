"""Which alerts a target gets (its `NotifyRules`): pure logic, no I/O, so every case is a unit test.

`Facts` is what a rule looks at, taken from the alert or the sighting (a zone or a direction only
where the event carries one: a rule asking for them passes no event without; an alert has its
read's zone, and a direction only when raised on a sighting).
`Cooldown` remembers, per target and plate, the event time of the last delivery decided, so one
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
from stream_worker.contracts.notify import WEEKDAYS, ActiveHours, NotifyRules, VehicleMatch
from stream_worker.contracts.sightings import Direction, PlateSighting

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


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)  # the contracts' times are UTC


class EventKind(StrEnum):
    """What a delivery is about: an alert (the alerts topic), or a sighting whose plate is on none
    (unknown) or one (allowed) of the target's allow lists (the sightings topic)."""

    ALERT = "alert"
    UNKNOWN_VEHICLE = "unknown_vehicle"
    ALLOWED_VEHICLE = "allowed_vehicle"


class Source(StrEnum):
    ALERTS = "alerts"
    SIGHTINGS = "sightings"


def source_of(kind: EventKind) -> Source:
    return Source.ALERTS if kind is EventKind.ALERT else Source.SIGHTINGS


def event_for(
    rules: NotifyRules, source: Source, facts: Facts, allowed_lists: Iterable[str] = ()
) -> EventKind | None:
    """What a target with `rules` gets from an event of `source` (the cooldown aside), or None. An
    alert goes to targets without allow lists; a sighting to those with, as an unknown vehicle
    when its plate is on none of them, or (`vehicles: allowed`) as an allowed vehicle when it is on
    one (`allowed_lists`: the allow lists its plate matched)."""
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
        self._last: OrderedDict[tuple[str, str], tuple[datetime, str]] = OrderedDict()
        self._max = max_remembered

    def admit(self, target: str, cooldown_s: float, facts: Facts) -> bool:
        """Whether the alert goes to `target`: no other alert of its plate was admitted there within
        `cooldown_s` before it (alert time); admitted, it starts a new cooldown."""
        key = (target, facts.plate)
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
