"""Visits in the store, on SQLite and a real PostgreSQL alike: a visit's events are upserted into one
row by its id (a replay, a duplicate or an `opened` read after its `closed` leave the same row),
who is on site now, the visit search (plate by entry or exit text, exact or fuzzy, site, camera,
state, time, pages), retention and `forget`, and the dwell-time report's buckets."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select
from store_records import T0, plate_visit

from stream_worker.store.database import Database
from stream_worker.store.plate_keys import fold
from stream_worker.store.reports import ReportRange, report
from stream_worker.store.retention import expire, forget
from stream_worker.store.rows import VisitRow, duration, utc
from stream_worker.store.schema import plate_variants
from stream_worker.store.schema import visits as visits_table
from stream_worker.store.visits import VisitQuery, on_site, search_visits
from stream_worker.store.writer import write_batch

HOUR = timedelta(hours=1)


def write(database: Database, *events) -> int:
    with database.begin() as connection:
        return write_batch(connection, [], [], batch_visits=list(events)).visits


def find(database: Database, **fields) -> list[VisitRow]:
    with database.connect() as connection:
        return search_visits(connection, VisitQuery(**fields)).items


def present(database: Database, site: str | None = None) -> list[VisitRow]:
    with database.connect() as connection:
        return on_site(connection, site)


def rows(database: Database) -> list[dict]:
    with database.connect() as connection:
        found = connection.execute(select(visits_table).order_by(visits_table.c.visit_id)).mappings()
        return [
            {
                k: utc(v) if isinstance(v, datetime) else v
                for k, v in row.items()
                if k not in ("seq", "stored_at")
            }
            for row in found
        ]


def test_an_open_visit_closed_later_is_one_row_with_its_dwell(database: Database) -> None:
    write(database, plate_visit("v", "B840OK197", overstay_s=3600))
    [open_visit] = present(database)
    assert (open_visit.plate, open_visit.site, open_visit.entered_at, open_visit.on_site) == (
        "B840OK197",
        "depot",
        T0,
        True,
    )
    assert open_visit.dwell_s is None and open_visit.dwell_at(T0 + HOUR) == 3600.0
    write(database, plate_visit("v", "B840OK197", "overstay", overstay_s=3600))
    write(database, plate_visit("v", "B840OK197", "closed", dwell=2 * HOUR, exit_text="B840CK197"))
    assert present(database) == []
    [visit] = find(database)
    assert visit.visit_id == open_visit.visit_id and visit.seq == open_visit.seq
    assert (visit.closed_at, visit.exited_at, visit.dwell_s) == (T0 + 2 * HOUR, T0 + 2 * HOUR, 7200.0)
    assert (visit.ended_by, visit.exit_camera_id, visit.exit_text) == ("exit", "exit", "B840CK197")
    assert (visit.overstay_s, visit.overstayed_at) == (3600.0, T0 + HOUR)
    assert visit.dwell_at(T0 + 10 * HOUR) == 7200.0  # closed: its dwell, whatever the time now
    assert duration(visit.dwell_s) == "2 h 00 min"


def test_replays_duplicates_and_any_order_leave_the_same_row(database: Database, tmp_path) -> None:
    """The events in order, one batch each, against: all of them twice in one batch, then each
    again alone in reverse order (an `opened` after its `closed`)."""
    events = [
        plate_visit("v", "B840OK197", overstay_s=60),
        plate_visit("v", "B840OK197", "overstay", overstay_s=60),
        plate_visit("v", "B840OK197", "closed", dwell=HOUR),
    ]
    for event in events:
        write(database, event)
    in_order = rows(database)
    assert len(in_order) == 1 and in_order[0]["dwell_s"] == 3600.0
    other = Database(f"sqlite:///{tmp_path}/other.db")
    other.migrate()
    try:
        assert write(other, *events, *events) == 3  # each visit once per kind in a batch
        for event in reversed(events):
            write(other, event)
        assert rows(other) == in_order
    finally:
        other.dispose()
    write(database, *reversed(events))
    assert rows(database) == in_order


def test_a_visit_closed_by_a_reentry_has_no_exit(database: Database) -> None:
    write(
        database,
        plate_visit("v", "A123BC77"),
        plate_visit("v", "A123BC77", "closed", dwell=5 * HOUR, exit_camera=None),
    )
    [visit] = find(database)
    assert (visit.ended_by, visit.exit_camera_id, visit.exit_text, visit.exited_at) == (
        "reentry",
        None,
        None,
        None,
    )
    assert visit.closed_at == T0 + 5 * HOUR and visit.dwell_s == 5 * 3600


@pytest.fixture
def depot(database: Database) -> Database:
    """Two sites: at depot B840OK197 on site (entered last) and A123BC77 twice (the first visit
    closed by an exit that read A123BC777, the second on site); at yard C555EE55, on site, entered
    through the `yard-in` camera."""
    write(
        database,
        plate_visit("b1", "B840OK197", entered_at=T0 + 3 * HOUR),
        plate_visit("a1", "A123BC77", entered_at=T0),
        plate_visit("a1", "A123BC77", "closed", dwell=HOUR, exit_text="A123BC777"),
        plate_visit("a2", "A123BC77", entered_at=T0 + 2 * HOUR),
        plate_visit("c1", "C555EE55", entered_at=T0 + HOUR, site="yard", entry_camera="yard-in"),
    )
    return database


def plates(found: list[VisitRow]) -> list[tuple[str, str]]:
    return [(v.plate, v.site) for v in found]


def test_on_site_now_per_site_oldest_entry_first(depot: Database) -> None:
    assert plates(present(depot)) == [("A123BC77", "depot"), ("B840OK197", "depot"), ("C555EE55", "yard")]
    assert plates(present(depot, "yard")) == [("C555EE55", "yard")]


def test_search_by_plate_exact_or_fuzzy_entry_or_exit_text(depot: Database) -> None:
    assert plates(find(depot, text="b840 ok 197", fuzzy=False)) == [("B840OK197", "depot")]
    assert find(depot, text="B840CK197", fuzzy=False) == []
    [fuzzy] = find(depot, text="B840CK197")
    assert (fuzzy.plate, fuzzy.distance) == ("B840OK197", 0.5)
    by_exit = find(depot, text="A123BC777", fuzzy=False)  # the exit's read, not the entry's
    assert [(v.plate, v.exit_text, v.distance) for v in by_exit] == [("A123BC77", "A123BC777", 0.0)]
    assert find(depot, text="X999XX99") == []


def test_filters_combine_and_pages_cover_every_visit_once(depot: Database) -> None:
    assert plates(find(depot, site="yard")) == [("C555EE55", "yard")]
    assert plates(find(depot, camera="exit")) == [("A123BC77", "depot")]  # its exit camera
    assert plates(find(depot, camera="yard-in")) == [("C555EE55", "yard")]
    assert [v.entered_at for v in find(depot, state="closed")] == [T0]
    assert len(find(depot, state="on-site")) == 3
    since = find(depot, since=T0 + HOUR, until=T0 + 3 * HOUR)  # since inclusive, until exclusive
    assert [v.entered_at for v in since] == [T0 + 2 * HOUR, T0 + HOUR]
    seen, cursor = [], None
    while True:
        with depot.connect() as connection:
            page = search_visits(connection, VisitQuery(limit=1, cursor=cursor))
        seen += [v.visit_id for v in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [v.visit_id for v in find(depot)] and len(set(seen)) == 4


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": " "}, "empty"),
        ({"state": "gone"}, "state"),
        ({"cursor": "x"}, "cursor"),
        ({"zone": "a"}, "zone"),
    ],
)
def test_bad_visit_queries_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VisitQuery(**fields)


def test_retention_and_forget_take_visits_and_their_index_rows(depot: Database) -> None:
    with depot.begin() as connection:
        deleted = expire(connection, 1, now=T0 + timedelta(days=1, hours=1, minutes=30))
    assert deleted.visits == 2  # entered at T0 and T0 + 1 h
    assert plates(find(depot)) == [("B840OK197", "depot"), ("A123BC77", "depot")]
    with depot.begin() as connection:
        assert forget(connection, "B840CK197").visits == 1
    assert plates(find(depot)) == [("A123BC77", "depot")]
    with depot.connect() as connection:
        left = select(func.count()).where(plate_variants.c.text_key == fold("B840OK197"))
        assert connection.execute(left).scalar() == 0


def test_the_dwell_report_counts_visits_ended_by_an_exit_per_bucket(database: Database) -> None:
    write(
        database,
        plate_visit("quick", "A1", "closed", dwell=timedelta(minutes=4, seconds=59)),
        plate_visit("five", "A2", "closed", dwell=timedelta(minutes=5)),
        plate_visit("long", "A3", "closed", dwell=timedelta(hours=3), entry_camera="yard-in"),
        plate_visit("days", "A4", "closed", dwell=timedelta(days=2), entered_at=T0 - timedelta(days=2)),
        plate_visit("reentry", "A5", "closed", dwell=HOUR, exit_camera=None),  # no exit: not a stay
        plate_visit("open", "A6"),  # on site: not a stay yet
        plate_visit("later", "A7", "closed", dwell=timedelta(days=1, hours=12)),  # ends after the range
    )
    span = ReportRange(T0, T0 + timedelta(days=1))
    with database.connect() as connection:
        answer = report(connection, "dwell", span)
        yard = report(connection, "dwell", ReportRange(span.since, span.until, "yard-in")).rows
        empty = report(connection, "dwell", ReportRange(T0 - timedelta(days=9), T0 - timedelta(days=8))).rows
    assert answer.columns == ("dwell", "visits", "from_s", "until_s")
    assert [(label, n) for label, n, _, _ in answer.rows] == [
        ("0-5 min", 1),
        ("5-15 min", 1),
        ("15-30 min", 0),
        ("30 min-1 h", 0),
        ("1-2 h", 0),
        ("2-4 h", 1),
        ("4-8 h", 0),
        ("8-24 h", 0),
        ("24 h+", 1),
    ]
    assert answer.rows[0][2:] == (0, 300) and answer.rows[-1][2:] == (86400, None)
    assert [n for _, n, _, _ in yard] == [0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert empty == []
