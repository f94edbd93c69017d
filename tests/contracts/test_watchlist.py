"""The watch-list contract: plate normalisation, entry validation, record encoding and decoding."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import orjson
import pytest
from pydantic import ValidationError

from stream_worker.contracts import SCHEMA_MODELS, SCHEMAS_DIR
from stream_worker.contracts.watchlist import (
    PLATE_ALPHABET,
    WatchEntry,
    WatchRecordError,
    decode_key,
    decode_record,
    encode_entry,
    encode_removal,
    new_entry,
    normalise_plate,
    validate_plate,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
ADDED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CYRILLIC = "АВЕКМНОРСТУХ"  # noqa: RUF001 - the point of the test


def _entry(**fields: object) -> WatchEntry:
    return WatchEntry.model_validate({"plate": "B840CK197", "list": "stolen", "added_at": ADDED, **fields})


# --- normalisation ----------------------------------------------------------------------------
def test_alphabet_is_the_served_recognizers() -> None:
    # The Triton model imports nothing of stream_worker: its copy is read from the source.
    source = (REPO_ROOT / "model_repository/plate_recognition/1/frames.py").read_text()
    assert re.search(r'VOCABULARY = "([^"]+)"', source).group(1) == PLATE_ALPHABET


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B840CK197", "B840CK197"),
        ("b840ck197", "B840CK197"),
        ("B 840 CK 197", "B840CK197"),
        ("B-840-CK-197", "B840CK197"),
        ("B840CK\u2013197", "B840CK197"),  # en dash
        ("AB-123-CD", "AB123CD"),
        ("ab.123.cd", "AB123CD"),
        ("AB\u00b7123 CD", "AB123CD"),  # middle dot
        ("7ABC\u2022123", "7ABC123"),  # bullet
        (" B840CK197\t\n", "B840CK197"),
        ("В840СК197", "B840CK197"),  # noqa: RUF001 - Cyrillic VE, ES, KA
        ("в 840 ск 197", "B840CK197"),
        ("B840СK197", "B840CK197"),  # noqa: RUF001 - mixed scripts
        ("", ""),
    ],
)
def test_normalise_plate(text: str, expected: str) -> None:
    assert normalise_plate(text) == expected


def test_every_cyrillic_lookalike_maps_to_its_latin_letter() -> None:
    assert normalise_plate(CYRILLIC) == "ABEKMHOPCTYX"
    assert normalise_plate(CYRILLIC.lower()) == "ABEKMHOPCTYX"


def test_normalise_leaves_other_letters_for_validation_to_refuse() -> None:
    assert normalise_plate("Ж123ZZ77") == "Ж123ZZ77"


@pytest.mark.parametrize(
    "text",
    ["A123BC", "A123BC77", "A123BC777", "123456", "в 001 ав 77", "AB-123-CD", "FUW999", "ZD", "A123.DC77"],
)
def test_validate_plate_accepts_2_to_9_latin_letters_and_digits(text: str) -> None:
    assert validate_plate(text) == normalise_plate(text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("A", "has 1 characters, not 2 to 9"),
        ("A123BC7777", "10 characters"),
        ("", "0 characters"),
        ("Ж123BC77", "'Ж'"),
        ("A123_BC77", "'_'"),
        ("A123ÄB", "'Ä'"),
    ],
)
def test_validate_plate_refuses_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        validate_plate(text)


# --- the model ----------------------------------------------------------------------------------
def test_entry_normalises_its_plate_and_defaults() -> None:
    entry = _entry(plate="в 840 ск-197")
    assert entry.plate == "B840CK197"
    assert (entry.schema_version, entry.label, entry.max_distance, entry.expires_at) == (1, None, None, None)


def test_entry_datetimes_are_utc() -> None:
    moscow = timezone(timedelta(hours=3))
    entry = _entry(added_at=datetime(2026, 3, 1, 15, 0, tzinfo=moscow), expires_at="2027-01-01T00:00:00")
    assert entry.added_at == ADDED and entry.added_at.tzinfo == UTC
    assert entry.expires_at == datetime(2027, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"plate": "A123BC7777"}, "plate"),
        ({"plate": "A123ЖC77"}, "plate"),
        ({"plate": 123456}, "plate"),
        ({"list": ""}, "list"),
        ({"list": "Stolen"}, "list"),
        ({"list": "stolen cars"}, "list"),
        ({"list": "-stolen"}, "list"),
        ({"list": "stolen-"}, "list"),
        ({"list": "x" * 65}, "list"),
        ({"label": "x" * 201}, "label"),
        ({"max_distance": -0.5}, "max_distance"),
        ({"schema_version": 2}, "schema_version"),
        ({"colour": "grey"}, "colour"),
        ({"added_at": None}, "added_at"),
    ],
)
def test_entry_validation(fields: dict, where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _entry(**fields)
    assert {error["loc"][0] for error in caught.value.errors()} == {where}


@pytest.mark.parametrize("name", ["stolen", "residents", "vip-2", "night_shift", "a", "x" * 64])
def test_entry_list_names(name: str) -> None:
    assert _entry(list=name).list == name


def test_entry_is_expired() -> None:
    entry = _entry(expires_at=ADDED + timedelta(days=1))
    assert not entry.is_expired(ADDED)
    assert entry.is_expired(ADDED + timedelta(days=1))
    assert not _entry().is_expired(datetime(2100, 1, 1, tzinfo=UTC))


def test_entry_validates_against_the_checked_in_schema() -> None:
    assert SCHEMA_MODELS["watch_entry.schema.json"] is WatchEntry
    schema = orjson.loads((SCHEMAS_DIR / "watch_entry.schema.json").read_bytes())
    value = orjson.loads(_entry(label="grey van", max_distance=1, expires_at=ADDED).to_json())
    jsonschema.validate(value, schema)
    assert value["added_at"] == "2026-03-01T12:00:00Z"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**value, "plate": "b840ck197"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**value, "extra": 1}, schema)


# --- new_entry: what a person typed -------------------------------------------------------------
def test_new_entry_from_typed_values() -> None:
    entry = new_entry(" в840ск197 ", " stolen ", "  grey van ", "1.5", "2027-01-01", now=ADDED)  # noqa: RUF001
    assert entry == WatchEntry(
        plate="B840CK197",
        list="stolen",
        label="grey van",
        max_distance=1.5,
        expires_at=datetime(2027, 1, 1, tzinfo=UTC),
        added_at=ADDED,
    )


def test_new_entry_blank_optionals_are_absent() -> None:
    entry = new_entry("B840CK197", "stolen", " ", " ", "", now=ADDED)
    assert (entry.label, entry.max_distance, entry.expires_at) == (None, None, None)


def test_new_entry_takes_numbers_and_datetimes_too() -> None:
    expiry = datetime(2027, 1, 1, 3, tzinfo=timezone(timedelta(hours=3)))
    entry = new_entry("B840CK197", "stolen", None, 0, expiry, now=ADDED)
    assert entry.max_distance == 0
    assert entry.expires_at == datetime(2027, 1, 1, tzinfo=UTC)


def test_new_entry_defaults_added_at_to_now() -> None:
    before = datetime.now(UTC)
    assert new_entry("B840CK197", "stolen").added_at >= before


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (("A123BC7777", "stolen"), "plate 'A123BC7777' has 10 characters"),
        (("A123ЖC77", "stolen"), "plate 'A123ЖC77' has characters no recognizer reads: 'Ж'"),
        (("B840CK197", "Stolen"), "list 'Stolen' is not a lowercase slug"),
        (("B840CK197", ""), "list '' is not a lowercase slug"),
        (("B840CK197", "stolen", "x" * 201), "label has 201 characters"),
        (("B840CK197", "stolen", None, "far"), "max_distance 'far' is not a number"),
        (("B840CK197", "stolen", None, "-1"), "max_distance -1.0 is not a finite number >= 0"),
        (("B840CK197", "stolen", None, "nan"), "max_distance nan is not a finite number"),
        (("B840CK197", "stolen", None, "inf"), "max_distance inf is not a finite number"),
        (("B840CK197", "stolen", None, None, "next week"), "expires_at 'next week' is not an ISO-8601"),
        (
            ("B840CK197", "stolen", None, None, "2026-03-01T11:00:00Z"),
            "expires_at 2026-03-01T11:00:00+00:00 is",
        ),
    ],
)
def test_new_entry_refuses_with_readable_reasons(args: tuple, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        new_entry(*args, now=ADDED)


def test_new_entry_reports_every_problem_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        new_entry("A123BC7777", "Bad List", None, "-1", "yesterday", now=ADDED)
    message = str(caught.value)
    for part in ("plate", "list", "max_distance", "expires_at"):
        assert part in message


# --- records -------------------------------------------------------------------------------------
def test_encode_decode_round_trip() -> None:
    entry = _entry(label="grey van", max_distance=0.5, expires_at=ADDED + timedelta(days=30))
    key, value = encode_entry(entry)
    assert key == b"B840CK197"
    assert decode_record(key, value) == ("B840CK197", entry)


def test_tombstone_round_trip() -> None:
    assert encode_removal("в 840 ск 197") == (b"B840CK197", None)
    assert decode_record(b"B840CK197", None) == ("B840CK197", None)


def test_encode_removal_refuses_a_bad_plate() -> None:
    with pytest.raises(ValueError, match="characters"):
        encode_removal("nope!")


def test_decode_key() -> None:
    assert decode_key(b"A123BC77") == "A123BC77"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, None, "no key"),
        (b"\xff\xfe", None, "not UTF-8"),
        (b"b840ck197", None, "normalised it would be 'B840CK197'"),
        (b"B840CK197!", None, "not a normalised plate"),
        (b"B840CK197", b"not json", "not JSON"),
        (b"B840CK197", b"[1, 2]", "not a JSON object"),
        (b"B840CK197", b'{"plate": "B840CK197"}', "list: Field required"),
        (
            b"B840CK197",
            b'{"plate": "B840CK197", "list": "stolen", "added_at": "2026-03-01T12:00:00Z", "colour": "grey"}',
            "colour: Extra inputs are not permitted",
        ),
        (b"A123BC77", _entry().to_json(), "plate 'B840CK197' differs from the key 'A123BC77'"),
    ],
)
def test_decode_refuses_with_clear_errors(key: bytes | None, value: bytes | None, reason: str) -> None:
    with pytest.raises(WatchRecordError, match=re.escape(reason)):
        decode_record(key, value)


def test_kind_is_left_out_of_a_watch_entrys_json_and_kept_for_an_allow_entry() -> None:
    from datetime import UTC, datetime

    from stream_worker.contracts.watchlist import WatchEntry, WatchKind, decode_record, new_entry

    added = datetime(2026, 3, 1, tzinfo=UTC)
    watched = WatchEntry(plate="B840CK197", list="stolen", added_at=added)
    assert b"kind" not in watched.to_json()  # byte-for-byte what the previous revision wrote
    allowed = new_entry("A123BC77", "residents", kind=WatchKind.ALLOW, now=added)
    assert b'"kind":"allow"' in allowed.to_json()
    assert decode_record(b"A123BC77", allowed.to_json())[1].effective_kind is WatchKind.ALLOW
    assert new_entry("B840CK197", "stolen", now=added).effective_kind is WatchKind.WATCH
