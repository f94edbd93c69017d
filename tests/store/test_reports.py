"""The reports on a real store, SQLite and PostgreSQL alike: counts per camera per hour and day
(UTC buckets, `since` inclusive, `until` exclusive), unique plates, top repeat plates, alerts per
list; and their CSV (cells escaped against formula injection) and JSON Lines files."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from store_records import T0, plate_alert, plate_sighting

from stream_worker.store import queries
from stream_worker.store.database import Database
from stream_worker.store.report_files import render
from stream_worker.store.reports import REPORTS, Report, ReportRange, report
from stream_worker.store.writer import write_batch

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)
SPAN = ReportRange(T0, MIDNIGHT + timedelta(days=1))


@pytest.fixture
def stored(database: Database) -> Database:
    """T0 is 2026-03-01 12:00 UTC: gate sees B840OK197 three times (once a second before midnight,
    once at midnight) and A123BC77 once; yard sees B840OK197 once; one sighting before the range
    and one at its end (both left out); two alerts on `stolen` (one acknowledged), one on `vip`."""
    sightings = [
        plate_sighting("s1", "B840OK197", T0),
        plate_sighting("s2", "B840OK197", T0 + timedelta(minutes=30)),
        plate_sighting("s3", "A123BC77", T0 + timedelta(minutes=61)),
        plate_sighting("s4", "B840OK197", MIDNIGHT - timedelta(seconds=1)),
        plate_sighting("s5", "B840OK197", MIDNIGHT, camera_id="yard"),
        plate_sighting("s6", "A123BC77", T0 - timedelta(microseconds=1)),
        plate_sighting("s7", "A123BC77", SPAN.until),
    ]
    alerts = [
        plate_alert("a1", "B840OK197", alerted_at=T0),
        plate_alert("a2", "B840OK197", alerted_at=T0 + timedelta(hours=1)),
        plate_alert("a3", "A123BC77", alerted_at=MIDNIGHT, camera_id="yard", list_name="vip"),
        plate_alert("a4", "A123BC77", alerted_at=SPAN.until, list_name="vip"),
    ]
    with database.begin() as connection:
        write_batch(connection, sightings, alerts)
    with database.begin() as connection:
        assert queries.acknowledge(connection, alerts[0].alert_id, "ada") is not None
    return database


def rows(database: Database, name: str, span: ReportRange = SPAN) -> list[tuple]:
    with database.connect() as connection:
        return report(connection, name, span).rows


def test_sightings_per_camera_per_hour_and_day_in_utc(stored: Database) -> None:
    assert rows(stored, "hourly") == [
        ("2026-03-01T12:00Z", "gate", 2),
        ("2026-03-01T13:00Z", "gate", 1),
        ("2026-03-01T23:00Z", "gate", 1),
        ("2026-03-02T00:00Z", "yard", 1),
    ]
    assert rows(stored, "daily") == [("2026-03-01", "gate", 4), ("2026-03-02", "yard", 1)]
    assert rows(stored, "daily", ReportRange(SPAN.since, SPAN.until, "yard")) == [("2026-03-02", "yard", 1)]


def test_a_range_in_another_time_zone_counts_the_same_instants(stored: Database) -> None:
    moscow = ReportRange(SPAN.since.astimezone(_zone(3)), SPAN.until.astimezone(_zone(3)))
    assert rows(stored, "hourly", moscow) == rows(stored, "hourly")


def _zone(hours: int):
    from datetime import timezone

    return timezone(timedelta(hours=hours))


def test_unique_and_top_plates(stored: Database) -> None:
    assert rows(stored, "plates") == [("2026-03-01", 4, 2), ("2026-03-02", 1, 1)]
    assert rows(stored, "top-plates") == [
        ("B840OK197", 4, "2026-03-01T12:00:00Z", "2026-03-02T00:00:00Z"),
        ("A123BC77", 1, "2026-03-01T13:01:00Z", "2026-03-01T13:01:00Z"),
    ]


def test_alerts_per_list(stored: Database) -> None:
    assert rows(stored, "alerts") == [("stolen", 2, 1, 1), ("vip", 1, 0, 1)]
    assert rows(stored, "alerts", ReportRange(SPAN.since, SPAN.until, "gate")) == [("stolen", 2, 1, 1)]


def test_every_report_of_an_empty_range_is_empty(stored: Database) -> None:
    empty = ReportRange(T0 - timedelta(days=3), T0 - timedelta(days=2))
    assert all(rows(stored, name, empty) == [] for name in REPORTS)


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        (T0, T0, "until must be after since"),
        (T0, T0 + timedelta(days=400), "at most 366 days"),
        (T0.replace(tzinfo=None), T0 + timedelta(hours=1), "time zone"),
    ],
)
def test_a_bad_range_is_refused(since: datetime, until: datetime, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReportRange(since, until)


def test_the_hourly_report_covers_31_days_at_most(stored: Database) -> None:
    with pytest.raises(ValueError, match="at most 31 days"):
        rows(stored, "hourly", ReportRange(T0, T0 + timedelta(days=32)))
    assert rows(stored, "daily", ReportRange(T0, T0 + timedelta(days=32)))


def test_an_unknown_report_is_refused(stored: Database) -> None:
    with stored.connect() as connection, pytest.raises(ValueError, match="unknown report 'visits'"):
        report(connection, "visits", SPAN)


HOSTILE = Report("daily", "t", ("day", "camera_id", "sightings"), [("2026-03-01", "=HYPERLINK(1)", 3)])


def test_csv_cells_that_start_like_a_formula_are_written_as_text() -> None:
    lines = list(csv.reader(io.StringIO(render(HOSTILE, "csv").decode())))
    assert lines == [["day", "camera_id", "sightings"], ["2026-03-01", "'=HYPERLINK(1)", "3"]]


def test_json_lines_carry_the_columns_as_keys() -> None:
    [line] = render(HOSTILE, "jsonl").splitlines()
    assert orjson.loads(line) == {"day": "2026-03-01", "camera_id": "=HYPERLINK(1)", "sightings": 3}
    with pytest.raises(ValueError, match="unknown format 'xlsx'"):
        render(HOSTILE, "xlsx")


def test_times_written_with_an_offset_count_in_their_utc_hour(database: Database) -> None:
    moscow = T0.astimezone(_zone(3))  # 15:00+03:00 is 12:00 UTC
    with database.begin() as connection:
        write_batch(
            connection,
            [plate_sighting("m", "B840OK197", moscow)],
            [plate_alert("m", "B840OK197", alerted_at=moscow)],
        )
    assert rows(database, "hourly") == [("2026-03-01T12:00Z", "gate", 1)]
    assert rows(database, "hourly", ReportRange(T0 + timedelta(hours=3), SPAN.until)) == []
    assert rows(database, "alerts", ReportRange(T0, T0 + timedelta(seconds=1))) == [("stolen", 1, 0, 1)]
