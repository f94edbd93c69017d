"""Corrections kept beside the sightings: stored, audited, found by both texts (exact and fuzzy),
replaced by a later review, and gone with their sighting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from store_records import plate_sighting

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
