"""The reports' counts, kept beside the sightings so that a report reads a row per camera per hour
or day (reports.py) instead of every sighting: a year of 50 cameras is at most 18,250 rows of
`sighting_days` and 365 of `day_plates`, whatever the number of sightings.

`sighting_hours` and `sighting_days` count each camera's sightings per hour and day; `plate_days`
a plate's (folded text) sightings per day, which is how the writer knows a plate is new that day;
`day_plates` each day's sightings and distinct plates. All by `last_seen`, cut as text in UTC the
way the reports cut it in SQL (`bucket`), so a bucket is the same whichever wrote it.

The writer adds the sightings its INSERT stored (`add`), in the batch's transaction: a batch read
again after a crash inserts nothing and so adds nothing. The store's deletions (retention, forget)
take away the rows their DELETE returned (`remove`). The counts are what counting the sightings
says, committed or rolled back with them. Corrections change neither a sighting's camera nor the
text it was read as: the reports count the text read, and so do these. `rebuild` counts everything
again from the sightings (for rows put in past the writer: a bulk fill).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Row,
    Table,
    bindparam,
    delete,
    distinct,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from stream_worker.store.schema import day_plates, plate_days, sighting_days, sighting_hours, sightings

HOUR, DAY = "hour", "day"
_SQLITE_CUT = {HOUR: 13, DAY: 10}  # "YYYY-MM-DD HH" / "YYYY-MM-DD" of "YYYY-MM-DD HH:MM:SS.ffffff"
_POSTGRES_CUT = {HOUR: "YYYY-MM-DD HH24", DAY: "YYYY-MM-DD"}
_PYTHON_CUT = {HOUR: "%Y-%m-%d %H", DAY: "%Y-%m-%d"}

# What `add` and `remove` need of a sighting, in this order (an INSERT's or DELETE's RETURNING).
COUNTED = (sightings.c.camera_id, sightings.c.last_seen, sightings.c.text_key)


def bucket(connection: Connection, column: Any, unit: str) -> Any:
    """The hour or day of `column` (a time stored in UTC) as text, the same on either database:
    SQLite keeps a time as its UTC digits, `substr` of them; PostgreSQL `to_char` of the UTC time."""
    if connection.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", column), _POSTGRES_CUT[unit])
    return func.substr(column, 1, _SQLITE_CUT[unit])


def cut(at: datetime, unit: str) -> str:
    """The hour or day of `at` as `bucket` cuts it in SQL."""
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)  # SQLite's are naive
    return at.strftime(_PYTHON_CUT[unit])


def _tallies(counted: Iterable[Row[Any] | tuple[Any, ...]]) -> tuple[Counter, Counter, Counter]:
    hours: Counter[tuple[str, str]] = Counter()
    days: Counter[tuple[str, str]] = Counter()
    plates: Counter[tuple[str, str]] = Counter()
    for camera_id, last_seen, text_key in counted:
        hour = cut(last_seen, HOUR)
        hours[hour, camera_id] += 1
        days[hour[:10], camera_id] += 1
        plates[hour[:10], text_key] += 1
    return hours, days, plates


def _keys(table: Table) -> tuple[Column, Column]:
    first, second = table.primary_key.columns
    return first, second


def _add_to(connection: Connection, table: Table, tally: Mapping[tuple[str, str], int]) -> None:
    """Add each (bucket, key)'s count (sorted: replicas on PostgreSQL lock rows in one order)."""
    first, second = _keys(table)
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    statement = dialect.insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=[first, second], set_={"sightings": table.c.sightings + statement.excluded.sightings}
    )
    rows = [{first.name: a, second.name: b, "sightings": n} for (a, b), n in sorted(tally.items())]
    connection.execute(statement, rows)


def _new_plates(connection: Connection, plates: Mapping[tuple[str, str], int]) -> Counter[str]:
    """Per day, the plates `plates` (just added to `plate_days`) were the first sightings of:
    those whose total is what was added. The rows stay locked by the upsert until the
    transaction ends, so no other writer's count is in them yet."""
    days = {day for day, _ in plates}
    keys = {key for _, key in plates}
    totals = connection.execute(
        select(plate_days.c.day, plate_days.c.text_key, plate_days.c.sightings).where(
            plate_days.c.day >= min(days), plate_days.c.day <= max(days), plate_days.c.text_key.in_(keys)
        )
    )
    return Counter(day for day, key, total in totals if plates.get((day, key)) == total)


def add(connection: Connection, counted: Iterable[Row[Any] | tuple[Any, ...]]) -> None:
    """Count the (camera_id, last_seen, text_key) of sightings just inserted, in the caller's
    transaction."""
    hours, days, plates = _tallies(counted)
    if not hours:
        return
    _add_to(connection, sighting_hours, hours)
    _add_to(connection, sighting_days, days)
    _add_to(connection, plate_days, plates)
    new = _new_plates(connection, plates)
    seen = _per_day(plates)
    dialect = sqlite if connection.dialect.name == "sqlite" else postgresql
    statement = dialect.insert(day_plates)
    statement = statement.on_conflict_do_update(
        index_elements=[day_plates.c.day],
        set_={
            "sightings": day_plates.c.sightings + statement.excluded.sightings,
            "unique_plates": day_plates.c.unique_plates + statement.excluded.unique_plates,
        },
    )
    connection.execute(
        statement,
        [{"day": day, "sightings": n, "unique_plates": new[day]} for day, n in sorted(seen.items())],
    )


def _per_day(plates: Mapping[tuple[str, str], int]) -> Counter[str]:
    """The sightings of each day, from the (day, plate) tally."""
    seen: Counter[str] = Counter()
    for (day, _), n in plates.items():
        seen[day] += n
    return seen


def _take_from(connection: Connection, table: Table, tally: Mapping[tuple[str, str], int]) -> list[str]:
    """Take each (bucket, key)'s count away and delete the rows left at 0; their buckets."""
    first, second = _keys(table)
    connection.execute(
        update(table)
        .where(first == bindparam("b_first"), second == bindparam("b_second"))
        .values(sightings=table.c.sightings - bindparam("b_n")),
        [{"b_first": a, "b_second": b, "b_n": n} for (a, b), n in sorted(tally.items())],
    )
    buckets = [a for a, _ in tally]
    gone = delete(table).where(first >= min(buckets), first <= max(buckets), table.c.sightings <= 0)
    return list(connection.execute(gone.returning(first)).scalars())


def remove(connection: Connection, counted: Iterable[Row[Any] | tuple[Any, ...]]) -> None:
    """Take away the (camera_id, last_seen, text_key) of sightings just deleted, in the caller's
    transaction."""
    hours, days, plates = _tallies(counted)
    if not hours:
        return
    _take_from(connection, sighting_hours, hours)
    _take_from(connection, sighting_days, days)
    gone = Counter(_take_from(connection, plate_days, plates))
    seen = _per_day(plates)
    connection.execute(
        update(day_plates)
        .where(day_plates.c.day == bindparam("b_day"))
        .values(
            sightings=day_plates.c.sightings - bindparam("b_n"),
            unique_plates=day_plates.c.unique_plates - bindparam("b_gone"),
        ),
        [{"b_day": day, "b_n": n, "b_gone": gone[day]} for day, n in sorted(seen.items())],
    )
    connection.execute(
        delete(day_plates).where(
            day_plates.c.day >= min(seen), day_plates.c.day <= max(seen), day_plates.c.sightings <= 0
        )
    )


def rebuild(connection: Connection) -> None:
    """Count every stored sighting again (replacing the counts), in the caller's transaction."""
    for table in (sighting_hours, sighting_days, plate_days, day_plates):
        connection.execute(delete(table))
    for table, unit, key in (
        (sighting_hours, HOUR, sightings.c.camera_id),
        (sighting_days, DAY, sightings.c.camera_id),
        (plate_days, DAY, sightings.c.text_key),
    ):
        at = bucket(connection, sightings.c.last_seen, unit).label("bucket")
        counts = select(at, key, func.count()).group_by(at, key)
        connection.execute(insert(table).from_select([unit, key.name, "sightings"], counts))
    at = bucket(connection, sightings.c.last_seen, DAY).label("bucket")
    totals = select(at, func.count(), func.count(distinct(sightings.c.text_key))).group_by(at)
    connection.execute(insert(day_plates).from_select(["day", "sightings", "unique_plates"], totals))
