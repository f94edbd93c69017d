"""Which corrections raise an alert (alerts/corrections.py), without Kafka."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline_services import entry

from stream_worker.alerts.corrections import CorrectionAlerts, RaisedAlerts
from stream_worker.alerts.history import HistoryRules, remember_alert
from stream_worker.alerts.recent import RecentPasses
from stream_worker.contracts import AlertOrigin
from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.plates.matching import Matcher
from tests.alerts.test_sightings import sighting

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
MATCHER = Matcher([entry("B840CK197")], 1.0)


def correction(
    old: str = "X123YZ77",
    new: str = "B840CK197",
    kind: CorrectionKind = CorrectionKind.CORRECT,
    at: datetime = NOW,
    with_read: bool = True,
) -> Correction:
    seen = sighting((old, 0.9), camera="gate-1")
    return Correction(
        sighting_id=seen.sighting_id,
        camera_id="gate-1",
        kind=kind,
        old_text=old,
        new_text=new,
        corrected_by="ada",
        corrected_at=at,
        best_read=seen.best_read if with_read else None,
        source=seen.source if with_read else None,
    )


def book(raised: RaisedAlerts | None = None) -> CorrectionAlerts:
    alerts = CorrectionAlerts("corrections", 3600.0, raised or RaisedAlerts(100), wall_clock=lambda: NOW)
    alerts.assign(0)
    return alerts


def test_a_text_corrected_onto_the_watch_list_alerts_once_marked_as_from_the_correction() -> None:
    alerts = book()
    made = correction()
    (outgoing,) = alerts.add(0, 0, made, MATCHER)
    alert = outgoing.alert
    assert (alert.origin, alert.sighting_id, alert.corrected_from) == (
        AlertOrigin.CORRECTION,
        made.sighting_id,
        "X123YZ77",
    )
    assert (alert.plate, alert.candidate, alert.confidence) == ("B840CK197", "B840CK197", 1.0)
    assert alert.frame_id == made.best_read.frame_id and alert.source.offset == made.source.first_offset
    assert alerts.committable() == {("corrections", 0): 0}  # held until acknowledged
    alerts.delivered(outgoing)
    assert alerts.committable() == {("corrections", 0): 1}
    # The same correction again (saved twice, or read again after a restart): nothing.
    assert alerts.add(0, 1, made, MATCHER) == []
    assert alerts.already_raised == 1


def test_an_alert_lost_before_its_acknowledgement_is_raised_by_the_next_reading() -> None:
    alerts = book()
    assert len(alerts.add(0, 0, correction(), MATCHER)) == 1
    assert alerts.revoke(0) == 1
    alerts.assign(0)
    assert len(alerts.add(0, 0, correction(), MATCHER)) == 1


def test_an_alert_read_back_from_the_alerts_topic_is_not_raised_again() -> None:
    first = book()
    (outgoing,) = first.add(0, 0, correction(), MATCHER)
    raised = RaisedAlerts(100)
    rules = HistoryRules("plates", 900.0)
    outcome = remember_alert(
        outgoing.alert.to_json(), rules, RecentPasses(10, 900.0), NOW, 0.0, on_correction=raised.add
    )
    assert outcome is False and outgoing.alert.alert_id in raised
    assert book(raised).add(0, 0, correction(), MATCHER) == []


def test_nothing_for_a_read_that_matched_already_a_confirmation_an_old_one_or_one_without_its_read() -> None:
    alerts = book()
    quiet = [
        correction(old="B840OK197"),  # the read text matched the entry already: its alert stands
        correction(old="B840CK197", new="B840CK197", kind=CorrectionKind.CONFIRM),
        correction(at=NOW - timedelta(hours=2)),  # older than max_age_s
        correction(with_read=False),
        correction(new="A001AA77"),  # on no list
    ]
    assert [alerts.add(0, offset, made, MATCHER) for offset, made in enumerate(quiet)] == [[]] * 5
    assert alerts.add(0, 5, None, MATCHER) == []  # a tombstone
    assert alerts.committable() == {("corrections", 0): 6}
