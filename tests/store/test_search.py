"""Plate search on a real SQLite file and a real PostgreSQL: exact, fuzzy (the alerts' distance),
filters, time ranges, newest-first pages that neither repeat nor skip."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError
from store_records import T0, plate_sighting

from stream_worker.contracts.sightings import PlateSighting
from stream_worker.store.database import Database
from stream_worker.store.plate_keys import fold, spellings
from stream_worker.store.search import MAX_SPELLINGS, SearchPage, SearchQuery, search
from stream_worker.store.writer import write_batch


def _write(database: Database, *records: PlateSighting) -> None:
    with database.begin() as connection:
        write_batch(connection, list(records), [])


def _search(database: Database, text: str | None = None, **fields: object) -> SearchPage:
    with database.connect() as connection:
        return search(connection, SearchQuery(text=text, **fields))


def _texts(page: SearchPage) -> list[str]:
    return [row.text for row in page.items]


def _minutes(minutes: float):
    return T0 + timedelta(minutes=minutes)


# The van and its neighbours, by weighted distance from B840CK197 (O/C, O/0, B/8, 5/4, E/Y
# cost 0.5; any other edit 1.0).
NEIGHBOURS = {
    "B840CK197": 0.0,
    "B840OK197": 0.5,  # the misread of the issue
    "8840OK197": 1.0,  # two cheap confusions
    "B840HK197": 1.0,  # a different letter: one whole edit
    "B840CK19": 1.0,  # a character lost
    "B840CK1977": 1.0,  # a character more
    "B84OHK197": 1.5,  # a whole edit and a cheap one
    "8B4OOK197": 2.0,  # four cheap ones: the same folded key, yet 2.0 away
    "B840HK198": 2.0,  # two whole edits
    "A123BC77": None,  # nothing alike
}


@pytest.fixture
def neighbours(database: Database) -> Database:
    _write(database, *(plate_sighting(text, text, _minutes(i)) for i, text in enumerate(NEIGHBOURS)))
    return database


# --- exact --------------------------------------------------------------------------------------
def test_exact_finds_only_the_text_however_it_is_spelled(neighbours: Database) -> None:
    for spelling in ("B840CK197", "в 840 ск 197", "b840-ck-197", "\u0412840\u0421\u041a197"):
        page = _search(neighbours, spelling, fuzzy=False)
        assert _texts(page) == ["B840CK197"], spelling
        assert page.items[0].distance == 0.0
        assert page.next_cursor is None


def test_exact_finds_nothing_for_a_misread(neighbours: Database) -> None:
    assert _search(neighbours, "B840XK197", fuzzy=False).items == []


def test_max_distance_zero_is_exact(neighbours: Database) -> None:
    assert _texts(_search(neighbours, "B840CK197", fuzzy=True, max_distance=0)) == ["B840CK197"]


# --- fuzzy --------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_distance", [0.5, 1.0, 1.5])
def test_fuzzy_finds_exactly_the_texts_within_max_distance_inclusive(
    neighbours: Database, max_distance: float
) -> None:
    page = _search(neighbours, "B840CK197", fuzzy=True, max_distance=max_distance)
    expected = {
        text for text, distance in NEIGHBOURS.items() if distance is not None and distance <= max_distance
    }
    assert set(_texts(page)) == expected
    assert {row.text: row.distance for row in page.items} == {text: NEIGHBOURS[text] for text in expected}


def test_the_default_tolerance_is_one_whole_edit_or_two_cheap_ones(neighbours: Database) -> None:
    # 1.0 is inclusive: the misread (0.5) and B840HK197 (1.0, a real other plate that one
    # misread letter would also produce) are found; 1.5 and 2.0 are not.
    found = set(_texts(_search(neighbours, "B840CK197")))
    assert {"B840CK197", "B840OK197", "B840HK197", "8840OK197"} <= found
    assert not found & {"B84OHK197", "8B4OOK197", "B840HK198", "A123BC77"}


def test_the_misread_is_found_from_the_listed_plate_and_back(database: Database) -> None:
    _write(database, plate_sighting("van", "B840OK197"))
    assert _texts(_search(database, "B840CK197")) == ["B840OK197"]
    _write(database, plate_sighting("listed", "B840CK197", _minutes(1)))
    assert _texts(_search(database, "B840OK197")) == ["B840CK197", "B840OK197"]


def test_fuzzy_results_are_newest_first_whatever_their_distance(neighbours: Database) -> None:
    page = _search(neighbours, "B840CK197")
    times = [row.last_seen for row in page.items]
    assert times == sorted(times, reverse=True)
    assert _texts(page)[0] == "B840CK1977"  # the newest of those found, 1.0 away


def test_a_plate_of_many_look_alike_characters_is_found_through_its_rows(database: Database) -> None:
    # 2**5 * 3**4 spellings: more than a search probes, so the key's sightings are read instead.
    assert spellings(fold("B0B0B0B0B"), MAX_SPELLINGS) is None
    _write(
        database,
        *(
            plate_sighting(text, text, _minutes(i))
            for i, text in enumerate(["B0B0B0B0B", "B0B0B0BOB", "B0B0B0B0H", "B0B0B0BOH"])
        ),
    )
    page = _search(database, "B0B0B0B0B")
    assert {row.text: row.distance for row in page.items} == {
        "B0B0B0B0B": 0.0,
        "B0B0B0BOB": 0.5,
        "B0B0B0B0H": 1.0,
    }


def test_fuzzy_finds_nothing_when_no_key_is_near(neighbours: Database) -> None:
    assert _search(neighbours, "XXXXXXXX").items == []


def test_fuzzy_beyond_the_variants_reach_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_distance"):
        SearchQuery(text="B840CK197", max_distance=2.0)


# --- filters and times --------------------------------------------------------------------------
@pytest.fixture
def traffic(database: Database) -> Database:
    records = [
        plate_sighting(
            "gate-in", "B840CK197", _minutes(0), camera_id="gate", zone="lane-1", direction="approaching"
        ),
        plate_sighting(
            "gate-out", "B840CK197", _minutes(10), camera_id="gate", zone="lane-2", direction="receding"
        ),
        plate_sighting("yard", "B840OK197", _minutes(20), camera_id="yard", zone="lane-1", direction="left"),
        plate_sighting("yard-none", "B840CK197", _minutes(30), camera_id="yard", zone=None, direction=None),
        plate_sighting(
            "other", "A123BC77", _minutes(40), camera_id="gate", zone="lane-1", direction="approaching"
        ),
    ]
    _write(database, *records)
    return database


def test_camera_zone_and_direction_filter_and_combine(traffic: Database) -> None:
    assert [row.camera_id for row in _search(traffic, "B840CK197", camera="gate").items] == ["gate", "gate"]
    assert [row.zone for row in _search(traffic, "B840CK197", zone="lane-1").items] == ["lane-1", "lane-1"]
    assert _texts(_search(traffic, "B840CK197", zone="lane-1", camera="yard")) == ["B840OK197"]
    assert _texts(_search(traffic, "B840CK197", fuzzy=False, zone="lane-1", camera="yard")) == []
    assert [row.direction for row in _search(traffic, "B840CK197", direction="receding").items] == [
        "receding"
    ]
    assert _search(traffic, "B840CK197", camera="nowhere").items == []


def test_without_text_every_sighting_matches_the_filters(traffic: Database) -> None:
    assert len(_search(traffic).items) == 5
    assert _texts(_search(traffic, camera="gate")) == ["A123BC77", "B840CK197", "B840CK197"]


def test_since_is_inclusive_and_until_exclusive_on_last_seen(traffic: Database) -> None:
    page = _search(traffic, "B840CK197", since=_minutes(10), until=_minutes(30))
    assert [row.last_seen for row in page.items] == [_minutes(20), _minutes(10)]
    assert len(_search(traffic, "B840CK197", since=_minutes(30)).items) == 1
    assert len(_search(traffic, "B840CK197", until=_minutes(0)).items) == 0
    assert len(_search(traffic, "B840CK197", until=_minutes(0.01)).items) == 1


def test_times_in_other_zones_and_naive_times_are_utc(traffic: Database) -> None:
    from datetime import timezone

    moscow = timezone(timedelta(hours=3))
    aware = _search(
        traffic, "B840CK197", since=_minutes(10).astimezone(moscow), until=_minutes(30).astimezone(moscow)
    )
    naive = _search(
        traffic, "B840CK197", since=_minutes(10).replace(tzinfo=None), until=_minutes(30).replace(tzinfo=None)
    )
    assert (
        [row.last_seen for row in aware.items]
        == [row.last_seen for row in naive.items]
        == [_minutes(20), _minutes(10)]
    )
    assert all(row.last_seen.utcoffset() == timedelta(0) for row in aware.items)


# --- pages --------------------------------------------------------------------------------------
def _all_pages(database: Database, limit: int, **fields: object) -> list[list[str]]:
    pages, cursor = [], None
    for _ in range(100):  # a cursor that does not move on fails here, not in an endless loop
        page = _search(database, limit=limit, cursor=cursor, **fields)
        pages.append([row.sighting_id for row in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return pages
    raise AssertionError(f"still paging after 100 pages: {pages[-3:]}")


def test_pages_cover_every_row_once_in_order_even_with_equal_times(database: Database) -> None:
    # 23 sightings, several sharing one last_seen (the tie broken by seq).
    records = [
        plate_sighting(f"s{i}", "B840CK197" if i % 3 else "B840OK197", _minutes(i // 4)) for i in range(23)
    ]
    _write(database, *records)
    whole = [row.sighting_id for row in _search(database, "B840CK197", limit=200).items]
    assert len(whole) == 23
    for limit in (1, 4, 5, 22, 23):
        pages = _all_pages(database, limit, text="B840CK197")
        assert [sighting for page in pages for sighting in page] == whole, limit
        assert all(len(page) == limit for page in pages[:-1])
        assert pages[-1]  # no empty last page: next_cursor is None exactly when nothing follows


def test_rows_stored_between_pages_neither_repeat_nor_shift_them(database: Database) -> None:
    _write(database, *(plate_sighting(f"old{i}", "B840CK197", _minutes(i)) for i in range(6)))
    first = _search(database, "B840CK197", limit=3)
    _write(database, *(plate_sighting(f"new{i}", "B840CK197", _minutes(100 + i)) for i in range(3)))
    _write(database, plate_sighting("late", "B840CK197", _minutes(2.5)))  # older than the cursor
    second = _search(database, "B840CK197", limit=3, cursor=first.next_cursor)
    assert [row.last_seen for row in first.items] == [_minutes(5), _minutes(4), _minutes(3)]
    assert [row.last_seen for row in second.items] == [_minutes(2.5), _minutes(2), _minutes(1)]


def test_a_cursor_is_opaque_and_checked() -> None:
    for bad in ("", "nonsense", "WyJ4Il0", "W10"):
        with pytest.raises(ValidationError, match="cursor"):
            SearchQuery(text="B840CK197", cursor=bad)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"text": " - "}, "empty"),
        ({"text": "A" * 33}, "longer"),
        ({"max_distance": -0.5}, "max_distance"),
        ({"direction": "sideways"}, "direction"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_queries_are_refused_with_the_field_named(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SearchQuery(**{"text": "B840CK197", **fields})


# --- with retention and forget (retention.py) ---------------------------------------------------
def test_a_forgotten_plate_and_its_look_alikes_are_found_no_more(database: Database) -> None:
    from stream_worker.store.retention import forget

    _write(
        database,
        plate_sighting("van", "B840CK197", _minutes(0)),
        plate_sighting("misread", "B840OK197", _minutes(1)),
        plate_sighting("neighbour", "B840HK197", _minutes(2)),
        plate_sighting("other", "A123BC77", _minutes(3)),
    )
    with database.begin() as connection:
        forget(connection, "B840CK197")
    assert _search(database, "B840CK197", fuzzy=False).items == []
    assert _search(database, "B840OK197", fuzzy=False).items == []
    # Fuzzy still finds the other plate 1.0 away, never the erased ones.
    assert _texts(_search(database, "B840CK197")) == ["B840HK197"]
    assert _texts(_search(database)) == ["A123BC77", "B840HK197"]
    # Stored again later, the plate is found again (its variants come back with it).
    _write(database, plate_sighting("back", "B840OK197", _minutes(9)))
    assert _texts(_search(database, "B840CK197")) == ["B840OK197", "B840HK197"]


def test_expired_rows_leave_the_results_and_a_cursor_past_them_still_pages_on(database: Database) -> None:
    from stream_worker.store.retention import expire

    _write(database, *(plate_sighting(f"s{i}", "B840CK197", T0 + timedelta(days=i)) for i in range(6)))
    first = _search(database, "B840CK197", limit=2)
    assert [row.last_seen for row in first.items] == [T0 + timedelta(days=5), T0 + timedelta(days=4)]
    with database.begin() as connection:  # keep 2.5 days back from day 5: days 3, 4, 5 stay
        expire(connection, retention_days=2.5, now=T0 + timedelta(days=5.5))
    second = _search(database, "B840CK197", limit=2, cursor=first.next_cursor)
    assert [row.last_seen for row in second.items] == [T0 + timedelta(days=3)]
    assert second.next_cursor is None
    assert len(_search(database, "B840CK197").items) == 3
