"""Every string the store writes from a record fits its column, because the
contract refuses longer ones (the store dead-letters them) instead of the database failing the batch.
Walks the String columns of the tables the writer fills against the contracts' JSON Schemas, so
that a column or a contract field changed alone fails here."""

from __future__ import annotations

from enum import StrEnum

import orjson
import pytest
from sqlalchemy import String
from store_records import plate_sighting, plate_visit

from stream_worker.contracts import SCHEMAS_DIR, AlertOrigin, Direction, MatchKind
from stream_worker.contracts.visits import VisitEnd
from stream_worker.store.plate_keys import MAX_KEY_LENGTH
from stream_worker.store.schema import alerts, pictures, plate_variants, sightings, visits
from stream_worker.store.writer import unwritable

# (table, column) -> where its value comes from: (schema, field path) or an enum of the values.
SOURCES: dict[tuple[str, str], tuple[str, str] | type[StrEnum]] = {
    ("sightings", "sighting_id"): ("plate_sighting", "sighting_id"),
    ("sightings", "camera_id"): ("plate_sighting", "camera_id"),
    ("sightings", "text"): ("plate_sighting", "text"),
    ("sightings", "direction"): Direction,
    ("sightings", "zone"): ("plate_sighting", "best_read.zone"),
    ("pictures", "sighting_id"): ("plate_sighting", "sighting_id"),
    ("alerts", "alert_id"): ("plate_alert", "alert_id"),
    ("alerts", "sighting_id"): ("plate_alert", "sighting_id"),
    ("alerts", "camera_id"): ("plate_alert", "camera_id"),
    ("alerts", "list"): ("plate_alert", "list"),
    ("alerts", "label"): ("plate_alert", "label"),
    ("alerts", "plate"): ("plate_alert", "plate"),
    ("alerts", "candidate"): ("plate_alert", "candidate"),
    ("alerts", "match_kind"): MatchKind,
    ("alerts", "origin"): AlertOrigin,
    ("alerts", "corrected_text"): ("correction", "new_text"),  # the console's correction record
    ("visits", "visit_id"): ("plate_visit", "visit_id"),
    ("visits", "site"): ("plate_visit", "site"),
    ("visits", "plate"): ("plate_visit", "plate"),
    ("visits", "entry_camera_id"): ("plate_visit", "entry_camera_id"),
    ("visits", "entry_sighting_id"): ("plate_visit", "entry_sighting_id"),
    ("visits", "ended_by"): VisitEnd,
    ("visits", "exit_camera_id"): ("plate_visit", "exit_camera_id"),
    ("visits", "exit_sighting_id"): ("plate_visit", "exit_sighting_id"),
    ("visits", "exit_text"): ("plate_visit", "exit_text"),
}
# Folded keys, bounded by the writer (writer.unwritable) and the index (plate_keys.MAX_KEY_LENGTH).
KEYS = {
    ("sightings", "text_key"),
    ("plate_variants", "variant"),
    ("plate_variants", "text_key"),
    ("visits", "text_key"),
}
NOT_FROM_RECORDS = {("alerts", "acknowledged_by")}  # the console's user name, not a record's


def _max_length(schema_name: str, path: str) -> int | None:
    schema = orjson.loads((SCHEMAS_DIR / f"{schema_name}.schema.json").read_bytes())
    node = schema
    for name in path.split("."):
        node = _resolved(schema, node)["properties"][name]
    node = _resolved(schema, node)
    branches = node.get("anyOf", [node])
    lengths = [branch.get("maxLength") for branch in branches if branch.get("type") == "string"]
    assert lengths, f"{schema_name} {path} is not a string"
    return None if None in lengths else max(lengths)


def _resolved(schema: dict, node: dict) -> dict:
    if "$ref" in node:
        return schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _string_columns():
    for table in (sightings, pictures, plate_variants, alerts, visits):
        for column in table.columns:
            if isinstance(column.type, String):
                yield table.name, column.name, column.type.length


@pytest.mark.parametrize(("table", "column", "length"), list(_string_columns()))
def test_every_string_column_holds_what_the_contract_lets_through(table: str, column: str, length: int):
    where = (table, column)
    if where in NOT_FROM_RECORDS:
        return
    if where in KEYS:
        assert length >= MAX_KEY_LENGTH
        return
    assert where in SOURCES, f"{table}.{column} is written from a record: say which field (SOURCES)"
    source = SOURCES[where]
    if isinstance(source, tuple):
        limit = _max_length(*source)
        assert limit is not None, f"{source} has no maxLength: a record could overflow {table}.{column}"
        assert limit <= length, f"{source} allows {limit} characters, {table}.{column} holds {length}"
    else:
        assert max(len(member.value) for member in source) <= length


def test_a_text_that_folds_longer_than_the_index_is_unwritable():
    assert unwritable(plate_sighting("s", "A123BC77")) is None
    grows = plate_sighting("s", "ß" * 20)  # 20 characters in the contract, 40 once uppercased
    assert (
        unwritable(grows) == f"text: folds to 40 characters, more than the {MAX_KEY_LENGTH} the store keeps"
    )


def test_a_visit_plate_that_folds_longer_than_the_index_is_unwritable():
    assert unwritable(plate_visit("v", "A123BC77")) is None
    grows = plate_visit("v", "ß" * 20)
    assert (
        unwritable(grows) == f"plate: folds to 40 characters, more than the {MAX_KEY_LENGTH} the store keeps"
    )
