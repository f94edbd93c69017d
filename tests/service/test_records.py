"""The one way the services decode a consumed record (service/records.Decoder): counted, then
its contract, or counted invalid, logged with where it lies and skipped (None), never raised."""

from __future__ import annotations

import logging

from stream_worker.contracts import PlateSighting
from stream_worker.service.metrics import ServiceMetrics
from stream_worker.service.records import Decoder, PlateRecord
from stream_worker.sightings.reads import InvalidEvent, parse_event

log = logging.getLogger("test.decoder")


def test_a_record_that_is_not_the_contract_is_counted_logged_and_skipped(caplog) -> None:
    metrics = ServiceMetrics("test")
    consumed, invalid = metrics.input_counters("sightings", "Sightings", "sightings", "PlateSighting")
    decode: Decoder[PlateSighting] = Decoder.of(PlateSighting, "sightings", consumed, invalid, log)
    with caplog.at_level(logging.WARNING, "test.decoder"):
        assert decode(PlateRecord(2, 41, b'{"not": "a sighting"}')) is None
        assert decode(PlateRecord(2, 42, None)) is None  # a tombstone
    sample = metrics.registry.get_sample_value
    assert sample("test_sightings_in_total") == 2 and sample("test_invalid_sightings_total") == 2
    [first, _] = caplog.records
    assert first.getMessage() == "skipped a record that is not a PlateSighting"
    assert (first.topic, first.partition, first.offset) == ("sightings", 2, 41)  # type: ignore[attr-defined]
    assert len(first.error) <= 300  # type: ignore[attr-defined]


def test_a_parser_of_its_own_with_its_own_errors() -> None:
    metrics = ServiceMetrics("test")
    consumed, invalid = metrics.input_counters("events", "Plate events", "plates", "PlateEvent")
    decode = Decoder(
        "PlateEvent",
        "plates",
        lambda record: parse_event(record.value, record.partition, record.offset),
        consumed,
        invalid,
        log,
        errors=(InvalidEvent,),
    )
    assert decode(PlateRecord(0, 7, b"[]")) is None
    assert metrics.registry.get_sample_value("test_invalid_events_total") == 1
