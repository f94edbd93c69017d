"""Which operators' corrections raise an alert, and which corrections offsets may be committed: the
corrections side of the alerts pipeline without Kafka, a function of the records and memory handed in.

A correction (contracts/corrections.py) whose corrected text matches a watch-list entry that the
text as read did not match raises ONE alert for the sighting and entry, origin `correction`, with
`corrected_from` the text as read and an id made of the camera, the entry and the sighting
(alert.py). An entry the text as read matched too raises nothing: the reads or the sighting alerted
for it already (or its cooldown held it back, as it would have held the corrected read).

Once only, across restarts: the ids of the correction alerts this process published and those
read back from the alerts topic (history.py: an earlier run's, another replica's) are remembered
(the newest `max_remembered`), and a correction whose alert is among them publishes nothing: a
correction read again after a restart (before its offset was committed), an operator saving the
same correction twice, and the compacted topic read from its start by a new group all find it.
What the memory cannot know is an alert beyond the history read back at the start (the last
`history_alerts` of each partition): such a correction read again raises its alert again, with
the same id (at-least-once, as the other alerts).
Corrections saved more than `max_age_s` ago raise nothing either, so a group that starts on a
long-lived corrections topic does not alert its whole past, and so that the memory covers the rest.

Raises nothing and is counted: a confirmation, a correction that only sets the region or country,
and one without the sighting's best read (the console had no record of the sighting).

Commits: a corrections offset is committed only once the alerts of its correction are
acknowledged by the broker (held meanwhile).

The alert a text as read raised and that the corrected text no longer matches is marked corrected
by the store when the console saves the correction (store/corrections.py), where the operator sees it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from stream_worker.alerts.alert import build_correction_alert, correction_alert_id
from stream_worker.alerts.held import HeldAlert
from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.plates.matching import Matcher
from stream_worker.service.offsets import TopicBook


@dataclass(frozen=True, slots=True)
class CorrectionOutgoing(HeldAlert):
    """A correction alert to publish; `CorrectionAlerts.delivered` once the broker acknowledged it."""

    corrected_at: datetime


class RaisedAlerts:
    """The ids of correction alerts published (here or read back), the newest `limit` of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, alert_id: str) -> None:
        self._ids[alert_id] = None
        self._ids.move_to_end(alert_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def __contains__(self, alert_id: object) -> bool:
        return alert_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)


class CorrectionAlerts(TopicBook):
    def __init__(
        self,
        topic: str,
        max_age_s: float,
        raised: RaisedAlerts,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        """`topic`: the corrections topic, whose offsets this commits."""
        super().__init__(topic)
        self.max_age_s = max_age_s
        self.raised = raised
        self._wall_clock = wall_clock
        self.already_raised = 0  # matches whose alert was published before (nothing published again)
        self.passed_over = 0  # confirmations, region-only, too old, or without the best read

    # --- assignment ------------------------------------------------------------------------

    def assign(self, partition: int) -> None:
        self._start(partition)

    def revoke(self, partition: int) -> int:
        """Forget a partition; returns how many of its alerts were unacknowledged."""
        return self._stop(partition)

    # --- records in, alerts out ------------------------------------------------------------

    def add(
        self, partition: int, offset: int, correction: Correction | None, matcher: Matcher
    ) -> list[CorrectionOutgoing]:
        """One record of the corrections topic (None: a tombstone or not a Correction)."""
        commits = self._offsets(partition)
        commits.consumed(offset)
        if correction is None:
            return []
        if not self._may_alert(correction):
            self.passed_over += 1
            return []
        when = correction.corrected_at
        before = {(m.entry.list, m.entry.plate) for m in matcher.match(correction.old_text, now=when)}
        outgoing = []
        for match in matcher.match(correction.new_text, now=when):
            entry = match.entry
            if (entry.list, entry.plate) in before:
                continue
            if correction_alert_id(correction.camera_id, entry.plate, entry.list, correction.sighting_id) in (
                self.raised
            ):
                self.already_raised += 1
                continue
            alert = build_correction_alert(correction, match, self._wall_clock())
            outgoing.append(CorrectionOutgoing(alert, partition, offset, commits, when))
            commits.hold(offset)
        return outgoing

    def _may_alert(self, correction: Correction) -> bool:
        age_s = (self._wall_clock() - correction.corrected_at).total_seconds()
        return (
            correction.kind is CorrectionKind.CORRECT
            and correction.changed
            and correction.best_read is not None
            and correction.source is not None
            and age_s <= self.max_age_s
        )

    def delivered(self, outgoing: CorrectionOutgoing) -> None:
        """The broker acknowledged `outgoing`'s alert: never again for its correction, which may
        be committed past. (Remembered only now: an alert lost with a revocation is raised again
        by whoever reads its correction next.)"""
        self.raised.add(outgoing.alert.alert_id)
        if self.is_current(outgoing):
            outgoing.commits.release(outgoing.offset)

    def is_current(self, outgoing: CorrectionOutgoing) -> bool:
        return self._is_current(outgoing.partition, outgoing.commits)
