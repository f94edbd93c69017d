"""The console's and `stream-worker report`'s reports: counts over a time range (and optionally one
camera), aggregated in the database, each a small table of rows.

Sightings count by `last_seen` (as search filters them: `since` inclusive, `until` exclusive),
alerts by `alerted_at`, visits by when they ended (`closed_at`); hours and days are UTC. The buckets
are cut as text in SQL (SQLite stores times as ISO text, `substr` of it; PostgreSQL `to_char` of the
UTC time), so both databases group the same way and a bucket's label is the same on either.

The sightings per camera per hour or day, and all cameras' unique plates per day, read the counts
the writer keeps per bucket (report_counts.py) for the range's whole hours or days, and the
sightings' `(last_seen, camera_id, text_key)` index for its partial first and last one: a year is
365 rows per camera, not every sighting. One camera's unique plates and the top plates read the
sightings' indexes (`(camera_id, last_seen)`, `(text_key, last_seen)`); the alerts their
`(alerted_at)` index; the cameras' health `camera_health`'s (camera_id, hour) key and its
(hour, camera_id) index.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, case, distinct, func, select

from stream_worker.store.camera_health import CODES, NONE, UP, states_seen
from stream_worker.store.report_counts import DAY, HOUR, bucket, cut
from stream_worker.store.schema import (
    alerts,
    camera_health,
    day_plates,
    sighting_days,
    sighting_hours,
    sightings,
    visits,
)

MAX_SPAN = timedelta(days=366)
MAX_HOURLY_SPAN = timedelta(days=31)  # 744 hours a camera: longer is the daily report's job
TOP_PLATES = 20
STREAMING = CODES[UP]  # a minute of camera_health.minutes that said streaming
_STEP = {HOUR: timedelta(hours=1), DAY: timedelta(days=1)}


@dataclass(frozen=True, slots=True)
class ReportRange:
    """What a report counts: `since` (inclusive) to `until` (exclusive), one camera or all."""

    since: datetime
    until: datetime
    camera: str | None = None

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value.tzinfo is None:
                raise ValueError(f"{name} needs a time zone")
            object.__setattr__(self, name, value.astimezone(UTC))
        if self.until <= self.since:
            raise ValueError("until must be after since")
        if self.until - self.since > MAX_SPAN:
            raise ValueError(f"a report covers at most {MAX_SPAN.days} days")


@dataclass(frozen=True, slots=True)
class Report:
    """One report's table: `columns` names each row's cells; times are ISO 8601 text (UTC)."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


def _label(bucket: str, unit: str) -> str:
    """The bucket as ISO 8601: `2026-03-01T14:00Z` for an hour, `2026-03-01` for a day."""
    return f"{bucket[:10]}T{bucket[11:13]}:00Z" if unit == HOUR else bucket[:10]


def _iso(value: Any) -> str:
    if isinstance(value, str):  # SQLite's min/max of the stored text
        value = datetime.fromisoformat(value)
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.isoformat(timespec="seconds").replace("+00:00", "Z")


def _in_range(span: ReportRange) -> list[Any]:
    conditions = [sightings.c.last_seen >= span.since, sightings.c.last_seen < span.until]
    if span.camera is not None:
        conditions.append(sightings.c.camera_id == span.camera)
    return conditions


def _pieces(
    span: ReportRange, unit: str
) -> tuple[ReportRange | None, tuple[str, str] | None, ReportRange | None]:
    """The range cut where its whole hours or days begin and end: the part before them, their
    first bucket and the bucket after their last (None when the range holds no whole one: then
    the part before is the range), and the part after them."""
    start = span.since.replace(minute=0, second=0, microsecond=0)
    end = span.until.replace(minute=0, second=0, microsecond=0)
    if unit == DAY:
        start, end = start.replace(hour=0), end.replace(hour=0)
    if start < span.since:
        start += _STEP[unit]
    if start >= end:
        return span, None, None
    before = ReportRange(span.since, start, span.camera) if span.since < start else None
    after = ReportRange(end, span.until, span.camera) if end < span.until else None
    return before, (cut(start, unit), cut(end, unit)), after


def _counted(
    connection: Connection,
    span: ReportRange,
    unit: str,
    counts: Callable[[str, str], Any],
    raw: Callable[[ReportRange], Any],
) -> list[Any]:
    """The rows of `raw(part)` (a query of the sightings) for the range's part before its whole
    hours or days, of `counts(first, end)` (a query of the writer's counts) for those, and of
    `raw` for the part after: each bucket from one of them, in order."""
    before, whole, after = _pieces(span, unit)
    rows = connection.execute(raw(before)).all() if before else []
    if whole:
        rows += connection.execute(counts(*whole)).all()
    if after:
        rows += connection.execute(raw(after)).all()
    return rows


def _per_camera(connection: Connection, span: ReportRange, unit: str) -> list[tuple[Any, ...]]:
    """Sightings per camera per hour or day: the whole ones from the writer's counts (a row per
    camera per bucket), the range's partial first and last from the sightings' index."""

    def raw(part: ReportRange) -> Any:
        at = bucket(connection, sightings.c.last_seen, unit).label("bucket")
        return (
            select(at, sightings.c.camera_id, func.count().label("n"))
            .where(*_in_range(part))
            .group_by(at, sightings.c.camera_id)
            .order_by(at, sightings.c.camera_id)
        )

    def counts(first: str, end: str) -> Any:
        table = sighting_hours if unit == HOUR else sighting_days
        at = table.c[unit]
        conditions = [at >= first, at < end]
        if span.camera is not None:
            conditions.append(table.c.camera_id == span.camera)
        return (
            select(at, table.c.camera_id, table.c.sightings)
            .where(*conditions)
            .order_by(at, table.c.camera_id)
        )

    rows = _counted(connection, span, unit, counts, raw)
    return [(_label(at, unit), camera, n) for at, camera, n in rows]


def sightings_per_hour(connection: Connection, span: ReportRange) -> Report:
    if span.until - span.since > MAX_HOURLY_SPAN:
        raise ValueError(f"the hourly report covers at most {MAX_HOURLY_SPAN.days} days: see daily")
    rows = _per_camera(connection, span, HOUR)
    return Report("hourly", "Sightings per camera per hour", ("hour", "camera_id", "sightings"), rows)


def sightings_per_day(connection: Connection, span: ReportRange) -> Report:
    rows = _per_camera(connection, span, DAY)
    return Report("daily", "Sightings per camera per day", ("day", "camera_id", "sightings"), rows)


def unique_plates(connection: Connection, span: ReportRange) -> Report:
    """Per day: sightings and distinct plates (folded text: B840OK197 and b840ok197 are one). All
    cameras' whole days from the writer's `day_plates`; one camera's (its own index) and the
    range's partial first and last day from the sightings."""

    def raw(part: ReportRange) -> Any:
        at = bucket(connection, sightings.c.last_seen, DAY).label("bucket")
        return (
            select(at, func.count(), func.count(distinct(sightings.c.text_key)))
            .where(*_in_range(part))
            .group_by(at)
            .order_by(at)
        )

    def counts(first: str, end: str) -> Any:
        days = day_plates.c
        return (
            select(days.day, days.sightings, days.unique_plates)
            .where(days.day >= first, days.day < end)
            .order_by(days.day)
        )

    found = (
        list(connection.execute(raw(span))) if span.camera else _counted(connection, span, DAY, counts, raw)
    )
    rows = [(_label(at, DAY), n, plates) for at, n, plates in found]
    return Report("plates", "Unique plates per day", ("day", "sightings", "unique_plates"), rows)


def top_plates(connection: Connection, span: ReportRange, limit: int = TOP_PLATES) -> Report:
    """The plates seen most often in the range (repeat visitors), most first, ties by folded text;
    each under its latest spelling in the range. The counts read the (text_key, last_seen) index
    alone; the spellings are one index probe per plate listed."""
    count = func.count().label("n")
    statement = (
        select(
            sightings.c.text_key,
            count,
            func.min(sightings.c.last_seen),
            func.max(sightings.c.last_seen),
        )
        .where(*_in_range(span))
        .group_by(sightings.c.text_key)
        .order_by(count.desc(), sightings.c.text_key)
        .limit(limit)
    )
    rows = []
    for key, n, first, last in connection.execute(statement).all():
        spelling = select(sightings.c.text).where(sightings.c.text_key == key, *_in_range(span))
        text = connection.execute(spelling.order_by(sightings.c.last_seen.desc()).limit(1)).scalar()
        rows.append((text, n, _iso(first), _iso(last)))
    columns = ("plate", "sightings", "first_seen", "last_seen")
    return Report("top-plates", "Top repeat plates", columns, rows)


def alerts_per_list(connection: Connection, span: ReportRange) -> Report:
    """Per watch list: alerts raised in the range, how many are acknowledged, distinct plates."""
    conditions = [alerts.c.alerted_at >= span.since, alerts.c.alerted_at < span.until]
    if span.camera is not None:
        conditions.append(alerts.c.camera_id == span.camera)
    acknowledged = func.sum(case((alerts.c.acknowledged_at.is_not(None), 1), else_=0))
    statement = (
        select(alerts.c.list, func.count(), acknowledged, func.count(distinct(alerts.c.plate)))
        .where(*conditions)
        .group_by(alerts.c.list)
        .order_by(alerts.c.list)
    )
    rows = [(name, n, int(acked or 0), plates) for name, n, acked, plates in connection.execute(statement)]
    columns = ("list", "alerts", "acknowledged", "plates")
    return Report("alerts", "Alerts per watch list", columns, rows)


def camera_health_per_hour(connection: Connection, span: ReportRange) -> Report:
    """Per camera per hour that begins in the range (camera_health.py): frames published and shed
    (the rises of the connector's counters), the minutes whose first record said streaming and
    those that said another state, the streaming share of the hour's 60 minutes (a minute without
    a record: the camera was not seen up), and the states seen with their minutes."""
    if span.until - span.since > MAX_HOURLY_SPAN:
        raise ValueError(f"the health report covers at most {MAX_HOURLY_SPAN.days} days")
    health = camera_health.c
    conditions = [health.hour >= span.since, health.hour < span.until]
    if span.camera is not None:
        conditions.append(health.camera_id == span.camera)
    at = bucket(connection, health.hour, HOUR).label("bucket")
    statement = (
        select(at, health.camera_id, health.frames_published, health.frames_shed, health.minutes)
        .where(*conditions)
        .order_by(health.hour, health.camera_id)
    )
    summaries: dict[str, tuple[int, int, float, str]] = {}  # most hours' minutes are alike
    labels: dict[str, str] = {}
    rows = []
    for at, camera, published, shed, minutes in connection.execute(statement).all():
        if minutes not in summaries:
            up = minutes.count(STREAMING)
            down = 60 - up - minutes.count(NONE)
            summaries[minutes] = (up, down, round(up / 60, 3), states_seen(minutes))
        if at not in labels:
            labels[at] = _label(at, HOUR)
        rows.append((labels[at], camera, published, shed, *summaries[minutes]))
    columns = ("hour", "camera_id", "frames_published", "frames_shed")
    columns += ("minutes_up", "minutes_down", "uptime", "states")
    return Report("health", "Camera health per hour", columns, rows)


# The dwell report's buckets: (label, from seconds inclusive, until seconds exclusive or None).
DWELL_BUCKETS: tuple[tuple[str, float, float | None], ...] = (
    ("0-5 min", 0, 300),
    ("5-15 min", 300, 900),
    ("15-30 min", 900, 1800),
    ("30 min-1 h", 1800, 3600),
    ("1-2 h", 3600, 7200),
    ("2-4 h", 7200, 14400),
    ("4-8 h", 14400, 28800),
    ("8-24 h", 28800, 86400),
    ("24 h+", 86400, None),
)


def dwell_times(connection: Connection, span: ReportRange) -> Report:
    """How long vehicles stayed: the visits that ended by an exit in the range (by `closed_at`;
    one camera: its entry or exit camera), counted per dwell bucket. Visits ended by a re-entry
    (no exit seen) and visits still open are not in it: their dwell is not a stay's length.
    Every bucket is listed, empty ones too, unless no visit ended in the range."""
    index = case(
        *((visits.c.dwell_s < until, number) for number, (_, _, until) in enumerate(DWELL_BUCKETS) if until),
        else_=len(DWELL_BUCKETS) - 1,
    ).label("bucket")
    conditions = [
        visits.c.closed_at >= span.since,
        visits.c.closed_at < span.until,
        visits.c.ended_by == "exit",
    ]
    if span.camera is not None:
        conditions.append(
            (visits.c.entry_camera_id == span.camera) | (visits.c.exit_camera_id == span.camera)
        )
    statement = select(index, func.count()).where(*conditions).group_by(index)
    counts = {int(bucket): n for bucket, n in connection.execute(statement)}
    rows = []
    if counts:
        for number, (label, start, until) in enumerate(DWELL_BUCKETS):
            rows.append((label, counts.get(number, 0), start, until))
    columns = ("dwell", "visits", "from_s", "until_s")
    return Report("dwell", "Dwell time of the visits ended", columns, rows)


# Which column a report's chart draws, against which (summed over the rows that share it).
_CHARTED = {
    "hourly": ("hour", "sightings"),
    "daily": ("day", "sightings"),
    "plates": ("day", "unique_plates"),
    "top-plates": ("plate", "sightings"),
    "alerts": ("list", "alerts"),
    "health": ("hour", "minutes_up"),
    "dwell": ("dwell", "visits"),
}


def series(answer: Report) -> list[tuple[str, int]]:
    """The report's chart: (label, value) in the report's order; the per-camera reports summed
    over cameras, so each bar is what the CSV's rows of that hour or day add up to."""
    label, value = (answer.columns.index(column) for column in _CHARTED[answer.name])
    totals: dict[str, int] = {}
    for row in answer.rows:
        totals[row[label]] = totals.get(row[label], 0) + row[value]
    return list(totals.items())


REPORTS: dict[str, Callable[[Connection, ReportRange], Report]] = {
    "hourly": sightings_per_hour,
    "daily": sightings_per_day,
    "plates": unique_plates,
    "top-plates": top_plates,
    "alerts": alerts_per_list,
    "health": camera_health_per_hour,
    "dwell": dwell_times,
}


def report(connection: Connection, name: str, span: ReportRange) -> Report:
    """The report called `name` (one of REPORTS); ValueError for another name."""
    if name not in REPORTS:
        raise ValueError(f"unknown report {name!r}: one of {', '.join(REPORTS)}")
    return REPORTS[name](connection, span)
