"""The cameras' health history on a real store, SQLite and PostgreSQL alike: per camera per hour,
the state of each minute's first status record (a replay or a second record of the minute changes
nothing) and the rises of the connector's counters (from zero after a restart or another replica,
none for a record older than the last), kept for the retention period; the health report's rows."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import func, select
from store_records import T0, camera_status, health_samples

from stream_worker.store.camera_health import sample
from stream_worker.store.database import Database
from stream_worker.store.reports import ReportRange, report
from stream_worker.store.retention import expire
from stream_worker.store.schema import camera_health
from stream_worker.store.writer import Written, write_batch

SPAN = ReportRange(T0, T0 + timedelta(hours=3))
MINUTE = timedelta(minutes=1)


def write(database: Database, *statuses) -> Written:
    with database.begin() as connection:
        return write_batch(connection, [], [], health=health_samples(*statuses))


def hours(database: Database) -> int:
    with database.connect() as connection:
        return connection.execute(select(func.count()).select_from(camera_health)).scalar_one()


def health(database: Database, span: ReportRange = SPAN) -> list[tuple]:
    with database.connect() as connection:
        return report(connection, "health", span).rows


def test_one_sample_per_camera_per_minute_and_a_replay_inserts_nothing(database: Database) -> None:
    first = camera_status("gate", T0 + timedelta(seconds=2), 100)
    same_minute = camera_status("gate", T0 + timedelta(seconds=57), 130, state="stalled")
    next_minute = camera_status("gate", T0 + MINUTE, 160)
    assert write(database, first, same_minute, next_minute) == Written(health=2)
    assert write(database, first, same_minute, next_minute) == Written()
    assert hours(database) == 1
    # The minute's first record (streaming) and its counter: 100 -> 160.
    assert health(database) == [("2026-03-01T12:00Z", "gate", 60, 0, 2, 0, 0.033, "streaming:2")]


def test_the_report_adds_the_counters_rises_per_camera_per_hour(database: Database) -> None:
    write(
        database,
        camera_status("gate", T0 - 2 * MINUTE, 100, shed=5),  # before the range: the first rise's base
        camera_status("gate", T0, 160, shed=5),
        camera_status("gate", T0 + MINUTE, 220, shed=9),
        camera_status("gate", T0 + 2 * MINUTE, 10, state="connecting", shed=0),  # the connector restarted
        camera_status("gate", T0 + 3 * MINUTE, 70, shed=1),
        camera_status("gate", T0 + 61 * MINUTE, 500, shed=None, replica="connector-2"),  # taken over
        camera_status("yard", T0 + 5 * MINUTE, 0, state="stalled", shed=None),
        camera_status("yard", T0 + 6 * MINUTE, 0, state="unreachable", shed=None),
        camera_status("yard", T0 + 7 * MINUTE, 0, state="unreachable", shed=None),
        camera_status("gate", SPAN.until, 900),  # the range's end: left out
    )
    columns = ("hour", "camera_id", "frames_published", "frames_shed", "minutes_up", "minutes_down")
    with database.connect() as connection:
        assert report(connection, "health", SPAN).columns[: len(columns)] == columns
    assert health(database) == [
        (
            "2026-03-01T12:00Z",
            "gate",
            60 + 60 + 10 + 60,
            0 + 4 + 0 + 1,
            3,
            1,
            0.05,
            "streaming:3 connecting:1",
        ),
        ("2026-03-01T12:00Z", "yard", 0, 0, 0, 3, 0.0, "unreachable:2 stalled:1"),
        ("2026-03-01T13:00Z", "gate", 500, 0, 1, 0, 0.017, "streaming:1"),
    ]
    assert health(database, ReportRange(SPAN.since, SPAN.until, "yard")) == [health(database)[1]]


def test_an_older_record_records_its_minute_without_a_rise(database: Database) -> None:
    write(database, camera_status("gate", T0 + 5 * MINUTE, 100), camera_status("gate", T0 + 6 * MINUTE, 150))
    write(database, camera_status("gate", T0 + MINUTE, 20, state="rebooting"))  # a clock set back
    write(database, camera_status("gate", T0 + 7 * MINUTE, 170))
    assert health(database) == [("2026-03-01T12:00Z", "gate", 70, 0, 3, 1, 0.05, "streaming:3 unknown:1")]


def test_the_health_report_covers_31_days_at_most(database: Database) -> None:
    with pytest.raises(ValueError, match="at most 31 days"):
        health(database, ReportRange(T0, T0 + timedelta(days=32)))


def test_retention_deletes_the_old_samples(database: Database) -> None:
    write(database, camera_status("gate", T0 - timedelta(days=40), 1), camera_status("gate", T0, 2))
    with database.begin() as connection:
        assert expire(connection, retention_days=30, now=T0).health == 1
    assert hours(database) == 1


@pytest.mark.parametrize(
    ("camera_id", "changes", "message"),
    [
        ("x" * 129, {}, "camera id"),
        ("", {}, "camera id"),
        ("gate", {"replica": "r" * 129}, "replica"),
        ("gate", {"updated_at": 1e300}, "updated_at"),
        ("gate", {"updated_at": -5.0}, "updated_at"),
        ("gate", {"frames_published": -1}, "frames_published"),
        ("gate", {"frames_shed": 2**70}, "frames_shed"),
    ],
)
def test_a_record_the_store_cannot_keep_is_refused_by_name(
    camera_id: str, changes: dict, message: str
) -> None:
    status = replace(camera_status("gate", T0, 10), **changes)
    with pytest.raises(ValueError, match=message):
        sample(camera_id, status)
