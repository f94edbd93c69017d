"""Sightings of a site's entry and exit cameras -> visit events (opened, closed, overstay), pure logic.

- An entry camera's sighting opens a visit. An open visit of the same plate at the site (fuzzy, the
  watch lists' weighted edit distance, plates/matching.py) is closed first, `reentry`: no exit was
  seen.
- An exit camera's sighting closes the site's open visit whose plate is nearest to its text within
  `max_distance` (the latest entry on a tie), entered no later than it; one that matches none is
  counted (`unmatched_exits`) and publishes nothing, or, asked to (`hold_exit`), is handed back
  undecided (None) so that the caller tries it again once the entry it may wait for has come (an
  entry camera's partition read later than the exit camera's).
- A visit with a limit (the one `limit_of` finds for its plate, limits.py, else its entry camera's
  `site.overstay_s`, else the default) raises one overstay event when it lasts longer: on
  `overstays(now)`, or at the latest when it closes past its limit, before its `closed` event.

Everything is decided in capture time and every event's content follows from the sightings alone
(and the limits the watch list set when a visit opened, kept in its `opened` event), so a replay
decides the same events with the same ids. `apply` rebuilds the state from the events
published earlier (the service reads its own topic back at the start): a sighting already decided
(its visit opened, or closed by it as an exit) is passed over, and an open visit stays open across a
restart.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from stream_worker.contracts import PlateSighting, PlateVisit, VisitEnd, VisitEventKind
from stream_worker.contracts.cameras import SiteRole
from stream_worker.contracts.visits import visit_event_id, visit_id
from stream_worker.plates.matching import plate_distance
from stream_worker.visits.limits import Limit

DEFAULT_REMEMBERED = 100_000


@dataclass(frozen=True, slots=True)
class SiteCamera:
    """What pairing needs of a camera's settings (CameraSettings.site)."""

    site: str
    role: SiteRole
    overstay_s: float | None = None


@dataclass(slots=True)
class OpenVisit:
    visit_id: str
    site: str
    plate: str
    entry_camera_id: str
    entry_sighting_id: str
    entered_at: datetime
    overstay_s: float | None
    overstayed: bool = False
    list: str | None = None  # the watch list whose entry set the limit


@dataclass(slots=True)
class _Bounded:
    """A set that forgets its oldest members past `limit`."""

    limit: int
    items: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def add(self, item: str) -> None:
        self.items[item] = None
        self.items.move_to_end(item)
        while len(self.items) > self.limit:
            self.items.popitem(last=False)

    def __contains__(self, item: object) -> bool:
        return item in self.items


class Visits:
    def __init__(
        self,
        max_distance: float = 1.0,
        default_overstay_s: float | None = None,
        remembered: int = DEFAULT_REMEMBERED,
        limit_of: Callable[[PlateSighting], Limit | None] | None = None,
    ) -> None:
        self.max_distance = max_distance
        self.default_overstay_s = default_overstay_s
        self.limit_of = limit_of
        self._open: dict[str, OpenVisit] = {}  # by visit id
        self._by_site: dict[str, dict[str, OpenVisit]] = {}
        self._due: list[tuple[datetime, str]] = []  # (overstay time, visit id), lazily cleaned
        self._decided = _Bounded(remembered)  # sighting ids whose visit opened, or exits that closed one
        self._closed = _Bounded(remembered)  # visit ids
        self.unmatched_exits = 0
        self.late_entries = 0

    def __len__(self) -> int:
        return len(self._open)

    def open_visits(self) -> list[OpenVisit]:
        return sorted(self._open.values(), key=lambda visit: (visit.entered_at, visit.visit_id))

    # --- deciding --------------------------------------------------------------------------

    def add(
        self, sighting: PlateSighting, camera: SiteCamera | None, hold_exit: bool = False
    ) -> list[PlateVisit] | None:
        """The events a sighting decides; none for a camera of no site or a sighting already decided.
        None: an exit that closes no visit yet, with `hold_exit` (neither decided nor counted)."""
        if camera is None or sighting.sighting_id in self._decided:
            return []
        if camera.role is SiteRole.ENTRY:
            return self._entry(sighting, camera)
        return self._exit(sighting, camera, hold_exit)

    def overstays(self, now: datetime) -> list[PlateVisit]:
        """The overstay events of the open visits whose limit has passed by `now` (capture time)."""
        events = []
        while self._due and self._due[0][0] < now:
            _, visit = heapq.heappop(self._due)
            open_visit = self._open.get(visit)
            if open_visit is not None and not open_visit.overstayed:
                events.append(self._overstay(open_visit))
        return events

    def _entry(self, sighting: PlateSighting, camera: SiteCamera) -> list[PlateVisit]:
        events: list[PlateVisit] = []
        at = sighting.first_seen
        new_visit = visit_id(camera.site, sighting.sighting_id)
        if new_visit in self._closed:
            return []
        earlier = self._nearest(camera.site, sighting.text, at)
        if earlier is None and self._nearest(camera.site, sighting.text, None) is not None:
            self.late_entries += 1  # an entry older than the plate's open visit, consumed late
            return []
        if earlier is not None:
            events += self._close(earlier, sighting, at, VisitEnd.REENTRY)
        listed = self.limit_of(sighting) if self.limit_of is not None else None
        if listed is not None:
            limit, list_name = listed.seconds, listed.list
        else:
            limit = camera.overstay_s if camera.overstay_s is not None else self.default_overstay_s
            list_name = None
        visit = OpenVisit(
            new_visit,
            camera.site,
            sighting.text,
            sighting.camera_id,
            sighting.sighting_id,
            at,
            limit,
            list=list_name,
        )
        event = _event(visit, VisitEventKind.OPENED, at, overstay_s=limit, list=list_name)
        self.apply(event)
        return [*events, event]

    def _exit(self, sighting: PlateSighting, camera: SiteCamera, hold: bool) -> list[PlateVisit] | None:
        visit = self._nearest(camera.site, sighting.text, sighting.first_seen)
        if visit is None:
            if hold:
                return None
            self.unmatched_exits += 1
            return []
        return self._close(visit, sighting, sighting.first_seen, VisitEnd.EXIT)

    def _close(self, visit: OpenVisit, by: PlateSighting, at: datetime, end: VisitEnd) -> list[PlateVisit]:
        events = []
        if visit.overstay_s is not None and not visit.overstayed and _dwell(visit, at) > visit.overstay_s:
            events.append(self._overstay(visit))
        exit_fields: dict[str, object] = {"exit_sighting_id": by.sighting_id, "ended_by": end}
        if end is VisitEnd.EXIT:
            exit_fields |= {"exit_camera_id": by.camera_id, "exit_text": by.text, "exited_at": at}
        closed = _event(visit, VisitEventKind.CLOSED, at, **exit_fields)
        self.apply(closed)
        return [*events, closed]

    def _overstay(self, visit: OpenVisit) -> PlateVisit:
        assert visit.overstay_s is not None
        at = visit.entered_at + timedelta(seconds=visit.overstay_s)
        event = _event(visit, VisitEventKind.OVERSTAY, at, overstay_s=visit.overstay_s, list=visit.list)
        self.apply(event)
        return event

    def _nearest(self, site: str, text: str, at: datetime | None) -> OpenVisit | None:
        """The site's open visit nearest to `text` within max_distance, entered at or before `at`
        (any time: None); the latest entered on a tie."""
        best: tuple[float, datetime, OpenVisit] | None = None
        for visit in self._by_site.get(site, {}).values():
            if at is not None and visit.entered_at > at:
                continue
            distance = plate_distance(visit.plate, text, self.max_distance)
            if distance > self.max_distance:
                continue
            if best is None or distance < best[0] or (distance == best[0] and visit.entered_at > best[1]):
                best = (distance, visit.entered_at, visit)
        return None if best is None else best[2]

    # --- state -----------------------------------------------------------------------------

    def apply(self, event: PlateVisit) -> None:
        """Take an event into the state: one just decided, or one read back from the visits topic."""
        if event.event is VisitEventKind.OPENED:
            if event.visit_id in self._closed or event.visit_id in self._open:
                return
            visit = OpenVisit(
                event.visit_id,
                event.site,
                event.plate,
                event.entry_camera_id,
                event.entry_sighting_id,
                event.entered_at,
                event.overstay_s,
                list=event.list,
            )
            self._open[visit.visit_id] = visit
            self._by_site.setdefault(visit.site, {})[visit.visit_id] = visit
            self._decided.add(event.entry_sighting_id)
            if visit.overstay_s is not None:
                heapq.heappush(
                    self._due, (visit.entered_at + timedelta(seconds=visit.overstay_s), visit.visit_id)
                )
        elif event.event is VisitEventKind.OVERSTAY:
            visit = self._open.get(event.visit_id)
            if visit is not None:
                visit.overstayed = True
        else:
            self._decided.add(event.entry_sighting_id)
            # A re-entry's sighting opens the next visit: it is decided once that visit is opened.
            if event.ended_by is VisitEnd.EXIT and event.exit_sighting_id is not None:
                self._decided.add(event.exit_sighting_id)
            self._closed.add(event.visit_id)
            gone = self._open.pop(event.visit_id, None)
            if gone is not None:
                del self._by_site[gone.site][gone.visit_id]


def _dwell(visit: OpenVisit, at: datetime) -> float:
    return max(0.0, (at - visit.entered_at).total_seconds())


def _event(visit: OpenVisit, kind: VisitEventKind, at: datetime, **fields: object) -> PlateVisit:
    return PlateVisit(
        event_id=visit_event_id(visit.visit_id, kind),
        event=kind,
        visit_id=visit.visit_id,
        site=visit.site,
        plate=visit.plate,
        entry_camera_id=visit.entry_camera_id,
        entry_sighting_id=visit.entry_sighting_id,
        entered_at=visit.entered_at,
        at=at,
        dwell_s=round(_dwell(visit, at), 3),
        **fields,  # type: ignore[arg-type]
    )
