"""Corrections kept beside the sightings: stored, audited, found by both texts (exact and fuzzy),
replaced by a later review, and gone with their sighting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from store_records import plate_alert, plate_sighting

from stream_worker.contracts import PlateAlert, Source
from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.store import corrections, queries
from stream_worker.store.database import Database
from stream_worker.store.retention import expire, forget
from stream_worker.store.search import SearchQuery, search
from stream_worker.store.writer import write_batch


def _correction(
    sighting_id: str, old: str, new: str, kind: CorrectionKind = CorrectionKind.CORRECT
) -> Correction:
    return Correction(
        sighting_id=sighting_id,
        camera_id="gate-1",
        kind=kind,
        old_text=old,
        new_text=new,
        country="ru",
        corrected_by="ada",
        corrected_at=datetime.now(UTC),
    )


def test_a_corrected_sighting_is_found_by_both_texts_and_audited(database: Database) -> None:
    misread = plate_sighting("misread", "B840CK197")
    other = plate_sighting("other", "A123BC77")
    with database.begin() as connection:
        write_batch(connection, [misread, other], [])
    with database.connect() as connection:
        assert search(connection, SearchQuery(text="X777XX77")).items == []
    with database.begin() as connection:
        corrections.save(connection, _correction(misread.sighting_id, "B840CK197", "X777XX77"))
    with database.connect() as connection:
        exact = search(connection, SearchQuery(text="X777XX77", fuzzy=False)).items
        assert [(row.sighting_id, row.text, row.corrected_text) for row in exact] == [
            (misread.sighting_id, "B840CK197", "X777XX77")
        ]
        fuzzy = search(connection, SearchQuery(text="X777XX7")).items  # one character short
        assert [(row.sighting_id, row.distance) for row in fuzzy] == [(misread.sighting_id, 1.0)]
        assert [row.sighting_id for row in search(connection, SearchQuery(text="B840CK197")).items] == [
            misread.sighting_id
        ]
        stored = corrections.of_sighting(connection, misread.sighting_id)
        assert stored is not None and (stored.old_text, stored.text, stored.corrected_by) == (
            "B840CK197",
            "X777XX77",
            "ada",
        )
        (audit,) = queries.audit(connection)
        assert (audit.user, audit.action) == ("ada", "sighting.correct")
        assert audit.detail["old_text"] == "B840CK197" and audit.detail["new_text"] == "X777XX77"
    # A later review replaces the earlier one: the first corrected text finds nothing any more.
    with database.begin() as connection:
        corrections.save(
            connection, _correction(misread.sighting_id, "B840CK197", "B840CK197", CorrectionKind.CONFIRM)
        )
    with database.connect() as connection:
        assert search(connection, SearchQuery(text="X777XX77", fuzzy=False)).items == []
        assert corrections.of_sighting(connection, misread.sighting_id).kind is CorrectionKind.CONFIRM
    # Retention takes the correction with its sighting.
    with database.begin() as connection:
        expire(connection, 1, now=datetime.now(UTC) + timedelta(days=400))
    with database.connect() as connection:
        assert corrections.of_sighting(connection, misread.sighting_id) is None


def test_forgetting_a_corrected_plate_erases_the_sighting_read_otherwise(database: Database) -> None:
    misread = plate_sighting("misread", "B840CK197")
    with database.begin() as connection:
        write_batch(connection, [misread], [])
        corrections.save(connection, _correction(misread.sighting_id, "B840CK197", "X777XX77"))
    with database.begin() as connection:
        assert forget(connection, "X777XX77").sightings == 1
    with database.connect() as connection:
        assert queries.sighting(connection, misread.sighting_id) is None
        assert corrections.of_sighting(connection, misread.sighting_id) is None
        assert search(connection, SearchQuery(text="X777XX77")).items == []


def test_the_alerts_a_corrected_text_no_longer_matches_are_marked_and_a_later_review_unmarks_them(
    database: Database,
) -> None:
    misread = plate_sighting("misread", "B840CK197", camera_id="gate-1")

    # A read alert of the pass (one of its reads, naming no sighting), a sighting alert naming it;
    # not the sighting's: another camera's alert and another vehicle's read alert at the same time.
    def read_at(alert: PlateAlert, offset: int) -> PlateAlert:
        return alert.model_copy(update={"source": Source(topic="plates", partition=0, offset=offset)})

    read_alert = read_at(
        plate_alert("read", "B840CK197", camera_id="gate-1", alerted_at=misread.last_seen), 12
    )
    named = plate_alert("named", "B840CK197", camera_id="gate-1", sighting="misread")
    elsewhere = plate_alert("elsewhere", "B840CK197", camera_id="gate-2", alerted_at=misread.last_seen)
    beside = read_at(plate_alert("beside", "A123BC77", camera_id="gate-1", alerted_at=misread.last_seen), 30)
    with database.begin() as connection:
        write_batch(connection, [misread], [read_alert, named, elsewhere, beside])
    made = _correction(misread.sighting_id, "B840CK197", "X777XX77")
    with database.begin() as connection:
        assert corrections.mark_alerts(connection, made, {}) == 2
    with database.connect() as connection:
        marked = {row.alert_id: row.corrected_text for row in queries.alerts(connection).items}
    assert marked == {
        read_alert.alert_id: "X777XX77",
        named.alert_id: "X777XX77",
        elsewhere.alert_id: None,
        beside.alert_id: None,
    }
    # One misread character from the entry still matches it (within its tolerance): unmarked.
    again = _correction(misread.sighting_id, "B840CK197", "B840OK197")
    with database.begin() as connection:
        assert corrections.mark_alerts(connection, again, {}) == 0
    with database.connect() as connection:
        assert {row.corrected_text for row in queries.alerts(connection).items} == {None}


def test_the_reviewed_sightings_export_as_crops_with_their_texts(database: Database, tmp_path) -> None:
    from stream_worker.evaluation.crops import load_crop_labels
    from stream_worker.store.corrections_export import ExportError, ExportFilter, export

    corrected = plate_sighting("corrected", "B840OK197", camera_id="gate-1", picture=b"\xff\xd8one")
    confirmed = plate_sighting("confirmed", "A123BC77", camera_id="gate-1", picture=b"\xff\xd8two")
    elsewhere = plate_sighting("elsewhere", "E555EE55", camera_id="gate-2", picture=b"\xff\xd8three")
    no_picture = plate_sighting("no-picture", "M001MM01", camera_id="gate-1")
    unreviewed = plate_sighting("unreviewed", "K002KK02", camera_id="gate-1", picture=b"\xff\xd8four")
    with database.begin() as connection:
        write_batch(connection, [corrected, confirmed, elsewhere, no_picture, unreviewed], [])
        corrections.save(connection, _correction(corrected.sighting_id, "B840OK197", "B840CK197"))
        confirm = CorrectionKind.CONFIRM
        corrections.save(connection, _correction(confirmed.sighting_id, "A123BC77", "A123BC77", confirm))
        corrections.save(connection, _correction(elsewhere.sighting_id, "E555EE55", "E555EE56"))
        corrections.save(connection, _correction(no_picture.sighting_id, "M001MM01", "M001MM02"))
    out = tmp_path / "ru-reviewed"
    with database.connect() as connection:
        done = export(connection, out, ExportFilter(camera="gate-1", country="ru"))
    assert (done.crops, done.without_picture) == (2, 1)
    labels = load_crop_labels(out)  # what `stream-worker eval` reads
    assert sorted((label.plate, label.country) for label in labels) == [
        ("A123BC77", "ru"),
        ("B840CK197", "ru"),
    ]
    crop = next(label.file for label in labels if label.plate == "B840CK197")
    assert (out / crop).read_bytes() == b"\xff\xd8one"
    with database.connect() as connection, pytest.raises(ExportError, match="not an empty folder"):
        export(connection, out, ExportFilter())
