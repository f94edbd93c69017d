"""The alerts read back from the alerts topic into the memory of alerted passes (history.py): which
records are remembered, without Kafka. The restart against the real broker is in
test_alerts_integration.py."""

from __future__ import annotations

from datetime import timedelta

from plate_events import T0

from stream_worker.alerts.cooldowns import Cooldowns
from stream_worker.alerts.history import HistoryRules, remember_alert
from stream_worker.alerts.recent import RecentPasses
from tests.alerts.test_passes import NOW, Driver
from tests.alerts.test_sightings import Sightings, sighting

RULES = HistoryRules("plates", max_age_s=900.0)


def read_alert(camera: str = "gate-1", text: str = "B840OK197") -> bytes:
    """The read alert the engine raises on a pass's first read (offset 0 of plates partition 0)."""
    [out] = Driver().feed(camera, T0, text)
    return out.alert.to_json()


def test_a_read_alert_of_the_plates_topic_is_remembered_as_its_first_read():
    recent = RecentPasses(100, 900)
    assert remember_alert(read_alert(), RULES, recent, NOW, 0.0) is True
    assert recent.overlaps((0, "gate-1", "B840CK197"), 0, 7, 0.0)
    assert not recent.overlaps((0, "gate-1", "B840CK197"), 1, 7, 0.0)  # a sighting without that read
    assert not recent.overlaps((0, "gate-2", "B840CK197"), 0, 7, 0.0)


def test_an_alert_remembered_already_is_not_remembered_twice():
    recent = RecentPasses(100, 900)
    assert remember_alert(read_alert(), RULES, recent, NOW, 0.0) is True
    assert remember_alert(read_alert(), RULES, recent, NOW, 0.0) is False
    assert len(recent) == 1


def test_sighting_alerts_other_plates_topics_and_old_alerts_are_passed_over():
    recent = RecentPasses(100, 900)
    side = Sightings()
    [from_sighting] = side.add(sighting(("B840OK197", 0.8), best_confidence=0.2))
    assert remember_alert(from_sighting.alert.to_json(), RULES, recent, NOW, 0.0) is False
    other = HistoryRules("plates-eu", 900.0)
    assert remember_alert(read_alert(), other, recent, NOW, 0.0) is False
    assert remember_alert(read_alert(), RULES, recent, NOW + timedelta(seconds=901), 0.0) is False
    assert len(recent) == 0
    assert remember_alert(read_alert(), RULES, recent, NOW + timedelta(seconds=900), 0.0) is True


def test_a_record_that_is_not_an_alert_is_skipped():
    recent = RecentPasses(100, 900)
    assert remember_alert(b"not an alert", RULES, recent, NOW, 0.0) is None
    assert remember_alert(None, RULES, recent, NOW, 0.0) is None
    assert len(recent) == 0


def test_a_remembered_alert_confirms_the_sighting_of_its_pass():
    """After a restart: the memory holds only what the history read back, and the sighting of the
    alerted pass (unconfident best read) publishes nothing."""
    side = Sightings()
    assert remember_alert(read_alert(), RULES, side.recent, NOW, 0.0) is True
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=7)) == []
    assert side.engine.confirmed == 1


def test_every_read_alert_read_back_starts_its_cooldown_also_one_remembered_already():
    recent, cooldowns = RecentPasses(100, 900), Cooldowns(3.0, 10.0)
    for _ in range(2):
        remember_alert(read_alert(), RULES, recent, NOW, 0.0, cooldowns.alerted)
    key = (0, "gate-1", "B840CK197")
    assert not cooldowns.allows(key, T0 + 5.0, 9)
    assert cooldowns.allows(key, T0, 0)  # its own read, replayed
    assert cooldowns.allows((0, "gate-2", "B840CK197"), T0 + 5.0, 9)


def test_a_sighting_alert_read_back_starts_its_cooldown_for_reads_and_other_sightings():
    """After a restart: a sighting alert of the last run cools a read pass and another part of its
    pass; the same sighting, replayed, alerts again with its id."""
    [raised] = Sightings().add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=2))
    reads = Driver()
    side = Sightings(reads=reads)
    cooldowns = reads.engine.cooldowns
    remembered = remember_alert(
        raised.alert.to_json(),
        RULES,
        side.recent,
        NOW,
        0.0,
        cooldowns.alerted,
        lambda _id: None,
        cooldowns.alerted_sighting,
    )
    assert remembered is False and len(side.recent) == 0
    for _ in range(3):  # the reads of the sightings below, misread: no read alert
        reads.feed("gate-1", T0, "B840HH197")
    assert reads.feed("gate-1", T0 + 5.0, "B840OK197") == []  # in the sighting alert's cooldown
    assert side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=1, last=3)) == []
    [again] = side.add(sighting(("B840OK197", 0.8), best_confidence=0.2, first=0, last=2))
    assert again.alert.alert_id == raised.alert.alert_id
    other = HistoryRules("plates-eu", 900.0)
    fresh = Cooldowns(3.0, 10.0)
    remember_alert(
        raised.alert.to_json(),
        other,
        side.recent,
        NOW,
        0.0,
        fresh.alerted,
        lambda _id: None,
        fresh.alerted_sighting,
    )
    assert len(fresh) == 0  # another plates topic's sighting alert: passed over
