"""The console's reads (and its few writes) on a real SQLite file and a real PostgreSQL: a
sighting's detail and picture, the live feed, alerts and their acknowledgement, the audit trail,
the cameras seen."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_records import FAKE_JPEG, T0, alert_id, plate_alert, plate_sighting, sighting_id

from stream_worker.contracts.alerts import PlateAlert
from stream_worker.contracts.sightings import PlateSighting
from stream_worker.store import queries
from stream_worker.store.database import Database
from stream_worker.store.writer import write_batch


def _write(database: Database, sightings: list[PlateSighting] = (), alerts: list[PlateAlert] = ()) -> None:
    with database.begin() as connection:
        write_batch(connection, list(sightings), list(alerts))


def _minutes(minutes: float):
    return T0 + timedelta(minutes=minutes)


# --- a sighting ---------------------------------------------------------------------------------
def test_a_sighting_in_full_with_its_candidates_record_and_picture(database: Database) -> None:
    record = plate_sighting(
        "van",
        "B840OK197",
        zone="lane-1",
        picture=FAKE_JPEG,
        candidates=[("B840OK197", 0.61), ("B840CK197", 0.3)],
    )
    _write(database, [record])
    with database.connect() as connection:
        detail = queries.sighting(connection, sighting_id("van"))
        jpeg = queries.picture(connection, sighting_id("van"))
    assert detail is not None
    assert (detail.text, detail.camera_id, detail.zone, detail.direction) == (
        "B840OK197",
        "gate",
        "lane-1",
        "approaching",
    )
    assert detail.has_picture is True
    assert detail.last_seen == T0 and detail.first_seen == T0 - timedelta(seconds=3)
    assert detail.closed_at == T0 + timedelta(seconds=2)
    assert [candidate["text"] for candidate in detail.candidates] == ["B840OK197", "B840CK197"]
    assert detail.record["sighting_id"] == sighting_id("van")
    assert detail.record["best_read"]["frame_id"] == "gate/van"
    assert "image" not in detail.record["best_read"]  # the picture is kept once, apart
    assert jpeg == FAKE_JPEG


def test_a_sighting_without_picture_and_an_unknown_one(database: Database) -> None:
    _write(database, [plate_sighting("plain", "A123BC77")])
    with database.connect() as connection:
        detail = queries.sighting(connection, sighting_id("plain"))
        assert detail is not None and detail.has_picture is False
        assert queries.picture(connection, sighting_id("plain")) is None
        assert queries.sighting(connection, sighting_id("never")) is None
        assert queries.picture(connection, sighting_id("never")) is None


# --- the live feed ------------------------------------------------------------------------------
def test_the_live_feed_starts_with_the_newest_and_then_follows_seq_without_gaps(database: Database) -> None:
    _write(database, [plate_sighting(f"s{i}", "A123BC77", _minutes(i)) for i in range(5)])
    with database.connect() as connection:
        start = queries.recent_sightings(connection, limit=3)
    assert [row.sighting_id for row in start] == [sighting_id(f"s{i}") for i in (2, 3, 4)]
    seqs = [row.seq for row in start]
    assert seqs == sorted(seqs)
    last = seqs[-1]
    shown = []
    for batch in range(3):
        _write(
            database, [plate_sighting(f"b{batch}-{i}", "A123BC77", _minutes(10 + batch)) for i in range(3)]
        )
        with database.connect() as connection:
            for _ in range(5):  # polls; a feed that does not move on fails the assertion below
                rows = queries.recent_sightings(connection, after_seq=last, limit=2)
                if not rows:
                    break
                shown += [row.sighting_id for row in rows]
                last = rows[-1].seq
    assert shown == [sighting_id(f"b{batch}-{i}") for batch in range(3) for i in range(3)]
    with database.connect() as connection:
        assert queries.recent_sightings(connection, after_seq=last) == []


def test_the_live_feed_of_alerts(database: Database) -> None:
    _write(database, alerts=[plate_alert(f"a{i}", "B840CK197", alerted_at=_minutes(i)) for i in range(4)])
    with database.connect() as connection:
        start = queries.recent_alerts(connection, limit=2)
        assert [row.alert_id for row in start] == [alert_id("a2"), alert_id("a3")]
        assert queries.recent_alerts(connection, after_seq=start[-1].seq) == []
        everything = queries.recent_alerts(connection, after_seq=0)
    assert [row.alert_id for row in everything] == [alert_id(f"a{i}") for i in range(4)]


@pytest.mark.parametrize("limit", [0, 201])
def test_limits_are_checked(database: Database, limit: int) -> None:
    with database.connect() as connection:
        for read in (queries.recent_sightings, queries.recent_alerts):
            with pytest.raises(ValueError, match="limit"):
                read(connection, limit=limit)
        with pytest.raises(ValueError, match="limit"):
            queries.alerts(connection, limit=limit)
        with pytest.raises(ValueError, match="limit"):
            queries.audit(connection, limit=limit)


# --- alerts -------------------------------------------------------------------------------------
def test_an_alert_as_stored(database: Database) -> None:
    _write(
        database,
        [plate_sighting("van", "B840OK197")],
        [plate_alert("van", "B840CK197", "B840OK197", alerted_at=T0, sighting="van")],
    )
    with database.connect() as connection:
        row = queries.alert(connection, alert_id("van"))
        assert queries.alert(connection, alert_id("never")) is None
    assert row is not None
    assert (row.plate, row.candidate, row.match_kind, row.distance) == (
        "B840CK197",
        "B840OK197",
        "fuzzy",
        0.5,
    )
    assert (row.list, row.label, row.origin, row.camera_id) == (
        "stolen",
        "label of B840CK197",
        "sighting",
        "gate",
    )
    assert row.sighting_id == sighting_id("van")
    assert row.alerted_at == T0 and row.captured_at == T0 - timedelta(seconds=1)
    assert row.acknowledged_at is None and row.acknowledged_by is None


def test_alerts_newest_first_in_pages_and_by_acknowledgement(database: Database) -> None:
    # 7 alerts, some sharing a time; a2 and a5 acknowledged.
    _write(
        database, alerts=[plate_alert(f"a{i}", "B840CK197", alerted_at=_minutes(i // 2)) for i in range(7)]
    )
    with database.begin() as connection:
        for name in ("a2", "a5"):
            queries.acknowledge(connection, alert_id(name), "operator", now=_minutes(60))
    with database.connect() as connection:
        whole = queries.alerts(connection, limit=200)
        assert whole.next_cursor is None
        order = [row.alert_id for row in whole.items]
        assert order == [alert_id(f"a{i}") for i in (6, 5, 4, 3, 2, 1, 0)]
        paged, cursor = [], None
        for _ in range(10):  # a cursor that does not move on fails the assertion below
            page = queries.alerts(connection, limit=3, cursor=cursor)
            paged += [row.alert_id for row in page.items]
            if (cursor := page.next_cursor) is None:
                break
        assert paged == order
        acknowledged = queries.alerts(connection, acknowledged=True).items
        pending = queries.alerts(connection, acknowledged=False).items
    assert [row.alert_id for row in acknowledged] == [alert_id("a5"), alert_id("a2")]
    assert all(row.acknowledged_by == "operator" for row in acknowledged)
    assert [row.alert_id for row in pending] == [alert_id(f"a{i}") for i in (6, 4, 3, 1, 0)]


def test_a_bad_alert_cursor_is_refused(database: Database) -> None:
    with database.connect() as connection, pytest.raises(ValueError, match="cursor"):
        queries.alerts(connection, cursor="nonsense")


def test_acknowledging_keeps_the_first_and_audits_once(database: Database) -> None:
    _write(database, alerts=[plate_alert("a", "B840CK197")])
    with database.begin() as connection:
        first = queries.acknowledge(connection, alert_id("a"), "alice", now=_minutes(5))
    with database.begin() as connection:
        again = queries.acknowledge(connection, alert_id("a"), "bob", now=_minutes(6))
        missing = queries.acknowledge(connection, alert_id("never"), "bob")
    assert first is not None and again is not None and missing is None
    assert (first.acknowledged_by, first.acknowledged_at) == ("alice", _minutes(5))
    assert (again.acknowledged_by, again.acknowledged_at) == ("alice", _minutes(5))
    with database.connect() as connection:
        trail = queries.audit(connection)
    assert [(row.user, row.action, row.detail) for row in trail] == [
        ("alice", "alert.acknowledge", {"alert_id": alert_id("a")})
    ]
    assert trail[0].at == _minutes(5)


def test_an_acknowledgement_rolled_back_leaves_no_trace(database: Database) -> None:
    _write(database, alerts=[plate_alert("a", "B840CK197")])
    with pytest.raises(RuntimeError), database.begin() as connection:
        queries.acknowledge(connection, alert_id("a"), "alice")
        raise RuntimeError("the request failed after the update")
    with database.connect() as connection:
        row = queries.alert(connection, alert_id("a"))
        assert row is not None and row.acknowledged_at is None
        assert queries.audit(connection) == []


# --- audit --------------------------------------------------------------------------------------
def test_the_audit_trail_newest_first_and_older_pages(database: Database) -> None:
    with database.begin() as connection:
        for index in range(5):
            queries.add_audit(
                connection,
                "admin",
                "watchlist.add",
                {"plate": f"A{index}23BC77", "list": "stolen"},
                _minutes(index),
            )
    with database.connect() as connection:
        newest = queries.audit(connection, limit=2)
        older = queries.audit(connection, limit=10, before_seq=newest[-1].seq)
    assert [row.detail["plate"] for row in newest] == ["A423BC77", "A323BC77"]
    assert [row.detail["plate"] for row in older] == ["A223BC77", "A123BC77", "A023BC77"]
    assert all(row.user == "admin" and row.action == "watchlist.add" for row in newest + older)
    assert newest[0].at == _minutes(4)


# --- cameras ------------------------------------------------------------------------------------
def test_the_cameras_seen_and_their_latest_time(database: Database) -> None:
    with database.connect() as connection:
        assert queries.cameras_seen(connection) == []
    _write(
        database,
        [
            plate_sighting("a", "A123BC77", _minutes(0), camera_id="yard"),
            plate_sighting("b", "A123BC77", _minutes(9), camera_id="gate"),
            plate_sighting("c", "A123BC77", _minutes(5), camera_id="yard"),
            plate_sighting("d", "A123BC77", _minutes(1), camera_id="gate"),
            plate_sighting("e", "A123BC77", _minutes(2), camera_id="car-park"),
        ],
    )
    with database.connect() as connection:
        seen = queries.cameras_seen(connection)
    assert [(camera.camera_id, camera.last_seen) for camera in seen] == [
        ("car-park", _minutes(2)),
        ("gate", _minutes(9)),
        ("yard", _minutes(5)),
    ]
